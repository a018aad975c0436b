"""The one loopback fake OpenAI-compatible server, for offline tests and benchmarks.

:class:`FakeServer` (standard library only, one thread per connection) is scripted
two ways, mixed freely: a queue of raw :class:`FakeReply` (JSON, raw bytes, SSE
events or an error, optionally after a delay) answered to any POST, so tests
drive the real vendor SDKs (OpenAI, Anthropic, Responses) and the HTTP client
against exact wire bytes; and a ``responder`` callable (default :func:`echo`)
answering ``/v1/chat/completions`` with a :class:`Reply` (text, tool calls, usage,
errors, delays; for ``"stream": true`` chunked server-sent events with text and
tool-call deltas and an optional mid-stream failure, as OpenAI and llama.cpp
stream). ``/v1/models`` lists its models. It records every request (:class:`Received`:
body, headers, path, client port) and when each stream ended, so tests assert
exactly what was sent.

:func:`completion` builds a ``chat.completion`` body for a :class:`FakeReply`,
:func:`completion_body` the one a :class:`Reply` gets.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class FakeReply:
    """One scripted answer: ``body`` as JSON, ``raw`` bytes, or ``sse`` events, after ``delay`` s.

    ``chunk_delay`` sleeps between SSE events (to test that streaming really streams); an
    ``(name, data)`` event is sent with its ``event:`` line (Anthropic's streams);
    ``content_type`` overrides the header of a ``raw`` body.
    """

    body: Any = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    sse: list[Any] | None = None
    delay: float = 0.0
    raw: bytes | None = None
    content_type: str = "application/json"
    chunk_delay: float = 0.0


@dataclass(frozen=True)
class Received:
    """One request the server received (``peer``: the client's port; a reused
    connection repeats it)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    peer: int = 0


def completion(text: str = "", calls: list[tuple[str, str, str]] | None = None) -> dict[str, Any]:
    """A ``chat.completion`` body: text, or tool calls given as (id, name, arguments)."""
    msg: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        msg["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    return {
        "id": "cmpl-1", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "message": msg,
                     "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }


@dataclass
class Reply:
    """A scripted answer: text, tool calls ``[(name, args_dict)]``, or an HTTP error."""

    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200
    error: str | None = None
    delay: float = 0.0
    prompt_tokens: int = 10
    completion_tokens: int = 5
    #: Streaming: the text in these pieces (default: word by word) ...
    pieces: list[str] | None = None
    #: ... with this pause before each chunk after the first.
    chunk_delay: float = 0.0
    #: Streaming: after this many text pieces, an error event instead of the rest.
    fail_after: int | None = None


Responder = Callable[[dict[str, Any]], Reply]


def echo(body: dict[str, Any]) -> Reply:
    """Answers ``echo: <last user message>``."""
    last: dict[str, Any] = next(
        (m for m in reversed(body.get("messages", [])) if m.get("role") == "user"), {})
    return Reply(text=f"echo: {last.get('content', '')}")


def completion_body(body: dict[str, Any], reply: Reply, n: int) -> dict[str, Any]:
    """The ``chat.completion`` JSON for a reply."""
    msg: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.tool_calls:
        msg["tool_calls"] = [
            {"id": f"call_{n}_{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args, separators=(",", ":"))}}
            for i, (name, args) in enumerate(reply.tool_calls)
        ]
    return {
        "id": f"fake-{n}", "object": "chat.completion", "created": 0,
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "message": msg,
                     "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
        "usage": {"prompt_tokens": reply.prompt_tokens,
                  "completion_tokens": reply.completion_tokens,
                  "total_tokens": reply.prompt_tokens + reply.completion_tokens},
    }


def stream_events(body: dict[str, Any], reply: Reply, n: int) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` payloads of a streamed reply (no ``[DONE]``)."""
    base = {"id": f"fake-{n}", "object": "chat.completion.chunk", "created": 0,
            "model": body.get("model", "fake")}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    out = [chunk({"role": "assistant", "content": ""})]
    pieces = reply.pieces if reply.pieces is not None else [
        w + " " for w in reply.text.split(" ")[:-1]] + reply.text.split(" ")[-1:]
    out += [chunk({"content": p}) for p in pieces if p]
    for i, (name, args) in enumerate(reply.tool_calls):
        text = json.dumps(args, separators=(",", ":"))
        half = len(text) // 2
        out.append(chunk({"tool_calls": [{"index": i, "id": f"call_{n}_{i}", "type": "function",
                                          "function": {"name": name, "arguments": ""}}]}))
        for part in (text[:half], text[half:]):
            out.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": part}}]}))
    out.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
    if (body.get("stream_options") or {}).get("include_usage"):
        out.append({**base, "choices": [], "usage": {
            "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens}})
    return out


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024  # listen backlog: many clients connect at once in load runs
    daemon_threads = True


class FakeServer:
    """The loopback fake OpenAI-compatible server: ``http://127.0.0.1:PORT/v1`` (``url``).

    Two ways to script it, mixed freely:

    * queued raw :class:`FakeReply` (``FakeServer(reply, ...)``, :meth:`add`), answered
      in order to any POST whatever its path (Chat Completions, Responses, Anthropic
      Messages), then ``default`` if given;
    * a ``responder`` (``FakeServer(responder)`` or ``responder=``; :func:`echo` when
      nothing else is scripted) answering ``/chat/completions`` with a :class:`Reply`:
      a ``chat.completion``, or chunked server-sent events for ``"stream": true``.

    With neither a queued reply, a responder nor a default, a POST gets status 599
    ("script exhausted"). ``GET .../models`` lists ``models``. Every request is
    recorded (unless ``record=False``, for load runs): :attr:`requests`, and the
    views :attr:`received` (bodies), :attr:`headers`, :attr:`paths`, :attr:`peers`.
    Start it with ``with`` (or :meth:`start`, then :meth:`stop`).
    """

    def __init__(self, *script: FakeReply | Responder, default: FakeReply | None = None,
                 responder: Responder | None = None, record: bool = True,
                 models: tuple[str, ...] = ("fake-model",), port: int = 0) -> None:
        replies = [r for r in script if isinstance(r, FakeReply)]
        calls = [r for r in script if not isinstance(r, FakeReply)]
        if len(calls) > 1 or (calls and responder is not None):
            raise TypeError("FakeServer takes at most one responder")
        if calls:
            responder = calls[0]
        elif responder is None and not replies and default is None:
            responder = echo
        self.responder = responder
        self.queue: deque[FakeReply] = deque(replies)
        self.default = default
        self.record = record
        self.models = models
        self.requests: list[Received] = []
        self.completed = 0  # replies fully sent (an SSE reply counts once its last event is out)
        #: Numbers of the requests whose streamed reply has been sent to its end (recorded
        #: just before the last chunk goes out, so a client that read it all sees it here).
        self.streamed: list[int] = []
        #: ``time.monotonic()`` just before each streamed reply's last chunk, by number.
        self.ended: dict[int, float] = {}
        self._n = 0
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", port), _handler(self))
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT`` (Anthropic's base URL: its client adds ``/v1``)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: an OpenAI client's base URL."""
        return f"{self.root}/v1"

    @property
    def received(self) -> list[Any]:
        """The JSON bodies received, in order."""
        return [r.body for r in self.requests]

    @property
    def headers(self) -> list[dict[str, str]]:
        """Each request's headers (lower-case names)."""
        return [r.headers for r in self.requests]

    @property
    def paths(self) -> list[str]:
        """Each request's path."""
        return [r.path for r in self.requests]

    @property
    def peers(self) -> list[int]:
        """The client port of each request's connection (a reused connection repeats it)."""
        return [r.peer for r in self.requests]

    def add(self, *replies: FakeReply) -> FakeServer:
        """Queue more raw replies (answered before the responder)."""
        with self._lock:
            self.queue.extend(replies)
        return self

    def next_reply(self, got: Received) -> tuple[int, FakeReply | None]:
        """Record ``got``; its number and what answers it: the next queued reply, else
        the responder's (None: the responder is for ``got``), else the default."""
        with self._lock:
            self._n += 1
            if self.record:
                self.requests.append(got)
            if self.queue:
                return self._n, self.queue.popleft()
            n = self._n
        if self.responder is not None:
            return n, None
        if self.default is not None:
            return n, self.default
        return n, FakeReply({"error": {"message": "fake server: script exhausted"}}, status=599)

    def start(self) -> Self:
        if not self._thread.is_alive():
            self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # chunks and split writes go out at once

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None,
                  content_type: str = "application/json", raw: bytes | None = None) -> None:
            data = raw if raw is not None else (
                b"" if payload is None else json.dumps(payload).encode())
            reason = self.responses.get(status, ("",))[0]
            extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
            head = (f"HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\n{extra}"
                    f"content-length: {len(data)}\r\n\r\n").encode()
            self.wfile.write(head + data)  # one write: no Nagle/delayed-ACK stall

        def do_GET(self) -> None:
            if self.path.split("?")[0].rstrip("/").endswith("/models"):
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"}
                        for m in server.models]
                self._json(200, {"object": "list", "data": data})
            else:
                self._json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(size) if size else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            got = Received("POST", self.path, {k.lower(): v for k, v in self.headers.items()},
                           body, self.client_address[1])
            n, reply = server.next_reply(got)
            try:
                if reply is None:
                    self._respond(n, body if raw else {})
                else:
                    if reply.delay:
                        time.sleep(reply.delay)
                    self._raw(reply)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout tests)
            with server._lock:
                server.completed += 1

        def _raw(self, reply: FakeReply) -> None:
            """A queued reply, sent as scripted."""
            if reply.sse is None:
                self._json(reply.status, reply.body, reply.headers, reply.content_type,
                           reply.raw)
                return
            self.send_response(reply.status)
            for k, v in reply.headers.items():
                self.send_header(k, v)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for i, event in enumerate(reply.sse):
                if i and reply.chunk_delay:
                    time.sleep(reply.chunk_delay)
                name = ""
                if isinstance(event, tuple):  # (event name, data): a named event
                    name, event = f"event: {event[0]}\n", event[1]
                data = event if isinstance(event, str) else json.dumps(event)
                self.wfile.write(f"{name}data: {data}\n\n".encode())
                self.wfile.flush()
            self.close_connection = True

        def _respond(self, n: int, body: Any) -> None:
            """The responder's answer to an OpenAI Chat Completions request."""
            if not isinstance(body, dict):
                self._json(400, {"error": {"message": "bad json"}})
                return
            if not self.path.split("?")[0].endswith("/chat/completions"):
                self._json(404, {"error": {"message": f"no route {self.path}"}})
                return
            assert server.responder is not None
            reply = server.responder(body)
            if reply.delay:
                time.sleep(reply.delay)
            if reply.status != 200:
                self._json(reply.status, {"error": {"message": reply.error or "fake error",
                                                    "type": "fake"}})
                return
            if not body.get("stream"):
                self._json(200, completion_body(body, reply, n))
                return
            events = stream_events(body, reply, n)
            if reply.fail_after is not None:
                events = events[:reply.fail_after + 1] + [
                    {"error": {"message": reply.error or "fake failure mid-stream",
                               "type": "server_error"}}]

            def last_chunk() -> None:  # recorded before the client can see the end
                server.ended[n] = time.monotonic()
                server.streamed.append(n)

            self._stream(events, reply.chunk_delay, done=reply.fail_after is None,
                         before_last=last_chunk)

        def _stream(self, events: list[dict[str, Any]], pause: float, done: bool = True,
                    before_last: Callable[[], None] | None = None) -> None:
            self.wfile.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                             b"transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n")
            datas = [f"data: {json.dumps(e)}\n\n".encode() for e in events]
            sent = [*datas, b"data: [DONE]\n\n"] if done else datas
            for i, data in enumerate(sent):
                if i and pause:
                    time.sleep(pause)
                if i == len(sent) - 1 and before_last is not None:
                    before_last()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler
