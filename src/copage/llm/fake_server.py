"""A scripted HTTP server on 127.0.0.1 for offline tests of the network adapters.

It answers any POST from a queue of :class:`FakeReply` (JSON, SSE or an error,
optionally after a delay) and records what it received, so tests drive the
real vendor SDKs against it. Standard library only.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
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
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    """Serves queued replies on ``http://127.0.0.1:PORT``; use as a context manager."""

    def __init__(self, *replies: FakeReply, default: FakeReply | None = None) -> None:
        self.queue: deque[FakeReply] = deque(replies)
        self.default = default
        self.received: list[Received] = []
        self.completed = 0  # replies fully sent (an SSE reply counts once its last event is out)
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:51234``."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def add(self, *replies: FakeReply) -> FakeServer:
        """Queue more replies."""
        with self._lock:
            self.queue.extend(replies)
        return self

    def next_reply(self, received: Received) -> FakeReply:
        with self._lock:
            self.received.append(received)
            if self.queue:
                return self.queue.popleft()
        if self.default is not None:
            return self.default
        return FakeReply({"error": {"message": "fake server: script exhausted"}}, status=599)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def setup(self) -> None:
            super().setup()
            # headers and body go out in separate writes: avoid Nagle + delayed-ACK stalls
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_POST(self) -> None:
            size = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(size) if size else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            got = Received("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            reply = server.next_reply(got)
            if reply.delay:
                time.sleep(reply.delay)
            try:
                self._send(reply)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout tests)
            with server._lock:
                server.completed += 1

        def _send(self, reply: FakeReply) -> None:
            self.send_response(reply.status)
            for k, v in reply.headers.items():
                self.send_header(k, v)
            if reply.sse is not None:
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
                return
            if reply.raw is not None:
                payload = reply.raw
            else:
                payload = json.dumps(reply.body).encode() if reply.body is not None else b""
            self.send_header("content-type", reply.content_type)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler
