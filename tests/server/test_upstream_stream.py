"""Streaming from the upstream: SSE read as it arrives, deltas assembled, errors mapped."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from copage.llm.errors import (
    AuthError,
    BadResponse,
    ModelTimeout,
    RateLimited,
    RequestRejected,
    UpstreamError,
)
from copage.llm.fake_server import FakeServer, Reply
from copage.llm.http_model import HttpChatModel
from copage.llm.model_types import ChatRequest, StreamEvent, Usage
from copage.llm.sse import events
from copage.llm.transport import HttpxTransport, LoopbackTransport, Transport

REQ = ChatRequest(messages=({"role": "user", "content": "hi"},))
KEY = "sk-upstream-STREAM-0123456789"


def _model(url: str, kind: str, timeout: float = 10.0, retries: int = 0) -> HttpChatModel:
    transport: Transport = (LoopbackTransport(url, timeout) if kind == "loopback" else
                            HttpxTransport(httpx.AsyncClient(timeout=timeout)))
    return HttpChatModel("fake-model", base_url=url, transport=lambda: transport, api_key=KEY,
                         retries=retries)


async def _collect(model: HttpChatModel, on_event: Callable[[StreamEvent], None] | None = None
                   ) -> list[StreamEvent]:
    out = []
    async for e in model.stream(REQ):
        if on_event:
            on_event(e)
        out.append(e)
    await model._transport().aclose()
    return out


KINDS = ["loopback", "httpx"]


@pytest.mark.parametrize("kind", KINDS)
def test_first_delta_arrives_before_the_upstream_finishes(kind: str) -> None:
    pieces = ["The ", "answer ", "comes ", "in ", "pieces."]
    with FakeServer(lambda b: Reply(text="".join(pieces), pieces=pieces, chunk_delay=0.25)
                      ) as up:
        seen_unfinished: list[bool] = []

        def check(e: StreamEvent) -> None:
            if e.kind == "text" and not seen_unfinished:
                seen_unfinished.append(up.streamed == [])

        evs = asyncio.run(_collect(_model(up.url, kind), check))
        assert seen_unfinished == [True], "the first delta came while the upstream streamed"
        assert [e.text for e in evs if e.kind == "text"] == pieces
        done = evs[-1]
        assert done.kind == "done" and done.response is not None
        assert done.response.text == "The answer comes in pieces."
        assert done.response.usage == Usage(10, 5) and done.response.finish_reason == "stop"
        sent = up.received[-1]
        assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
        assert up.headers[-1]["authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("kind", KINDS)
def test_tool_call_deltas_are_assembled(kind: str) -> None:
    reply = Reply(tool_calls=[("get_weather", {"city": "Paris"}), ("recall", {"page": "p2"})])
    with FakeServer(lambda b: reply) as up:
        evs = asyncio.run(_collect(_model(up.url, kind)))
    deltas = [e.tool_call for e in evs if e.kind == "tool_call"]
    assert len(deltas) == 6 and {d.index for d in deltas if d} == {0, 1}
    resp = evs[-1].response
    assert resp is not None and resp.finish_reason == "tool_calls"
    assert [(c.name, json.loads(c.arguments)) for c in resp.tool_calls] == [
        ("get_weather", {"city": "Paris"}), ("recall", {"page": "p2"})]
    assert resp.tool_calls[0].id == "call_1_0"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("status", "error"), [
    (429, RateLimited), (401, AuthError), (400, RequestRejected), (500, UpstreamError)])
def test_error_statuses_map_like_the_non_streaming_path(kind: str, status: int,
                                                        error: type[Exception]) -> None:
    with FakeServer(lambda b: Reply(status=status, error=f"nope {KEY}")) as up:
        with pytest.raises(error) as streamed:
            asyncio.run(_collect(_model(up.url, kind)))
        with pytest.raises(error) as whole:
            asyncio.run(_model(up.url, kind).complete(REQ))
    assert KEY not in str(streamed.value) and str(streamed.value) == str(whole.value)


def test_retries_happen_before_the_first_event_only() -> None:
    n = {"i": 0}

    def respond(body: dict[str, Any]) -> Reply:
        n["i"] += 1
        return Reply(status=503) if n["i"] == 1 else Reply(text="second try")

    with FakeServer(respond) as up:
        evs = asyncio.run(_collect(_model(up.url, "loopback", retries=2)))
    assert evs[-1].response is not None and evs[-1].response.text == "second try"
    assert n["i"] == 2


# ----------------------------------------------- broken streams (a raw server)
Writer = Callable[[asyncio.StreamWriter], Awaitable[None]]


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def _event(payload: Any) -> bytes:
    return _chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")


HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"transfer-encoding: chunked\r\n\r\n")
TEXT = {"model": "m", "choices": [{"index": 0, "delta": {"content": "partial"}}]}


async def _against(write: Writer, kind: str, timeout: float = 5.0) -> list[StreamEvent]:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        size = next(int(x.split(b":")[1]) for x in head.split(b"\r\n")
                    if x.lower().startswith(b"content-length"))
        await reader.readexactly(size)
        try:
            await write(writer)
        finally:
            writer.close()

    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    try:
        return await _collect(_model(url, kind, timeout=timeout))
    finally:
        server.close()


@pytest.mark.parametrize("kind", KINDS)
def test_stream_that_breaks_off_is_an_upstream_error(kind: str) -> None:
    async def write(w: asyncio.StreamWriter) -> None:
        w.write(HEAD + _event(TEXT))
        await w.drain()

    with pytest.raises(UpstreamError):
        asyncio.run(_against(write, kind))


@pytest.mark.parametrize("kind", KINDS)
def test_stalled_stream_times_out(kind: str) -> None:
    async def write(w: asyncio.StreamWriter) -> None:
        w.write(HEAD + _event(TEXT))
        await w.drain()
        await asyncio.sleep(3)

    with pytest.raises(ModelTimeout):
        asyncio.run(_against(write, kind, timeout=0.5))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("bad", [b"data: {not json\n\n",
                                 b'data: {"error": {"message": "overloaded"}}\n\n',
                                 b'data: {"choices": 7}\n\n'])
def test_bad_events_are_mapped(kind: str, bad: bytes) -> None:
    async def write(w: asyncio.StreamWriter) -> None:
        w.write(HEAD + _event(TEXT) + _chunk(bad) + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await w.drain()

    with pytest.raises((BadResponse, UpstreamError)) as err:
        asyncio.run(_against(write, kind))
    if b"overloaded" in bad:
        assert "overloaded" in str(err.value)


# ------------------------------------------------------------------- the parser
def test_sse_parser_handles_any_split() -> None:
    text = ('data: {"a": 1}\r\n\r\n: keep-alive\n\nevent: x\ndata: line1\ndata: line2\n\n'
            'data:no-space\r\rdata: café ☕\n\ndata: [DONE]\n\n').encode()

    async def run(pieces: list[bytes]) -> list[str]:
        async def gen() -> AsyncIterator[bytes]:
            for p in pieces:
                yield p
        return [e async for e in events(gen())]

    expect = ['{"a": 1}', "line1\nline2", "no-space", "café ☕", "[DONE]"]
    assert asyncio.run(run([text])) == expect
    assert asyncio.run(run([bytes([b]) for b in text])) == expect  # byte by byte
    for cut in range(1, len(text)):
        assert asyncio.run(run([text[:cut], text[cut:]])) == expect


@pytest.mark.parametrize("kind", KINDS)
def test_streamed_calls_reuse_one_kept_alive_connection(kind: str) -> None:
    """After [DONE] the body's end is read (in the background), so the connection goes
    back to the pool: no new TCP (or TLS) handshake before each first token."""
    with FakeServer(lambda b: Reply(text="one two three")) as up:
        model = _model(up.url, kind)

        async def main() -> list[str]:
            texts = []
            for _ in range(3):
                events = [e async for e in model.stream(REQ)]
                assert events[-1].response is not None
                texts.append(events[-1].response.text)
                for _ in range(100):  # let the background drain return the connection
                    await asyncio.sleep(0.01)
                    if kind == "httpx" or model._transport()._idle:  # type: ignore[attr-defined]
                        break
            await model._transport().aclose()
            return texts

        assert asyncio.run(main()) == ["one two three"] * 3
    assert len(set(up.peers)) == 1, up.peers


def test_a_stale_idle_connection_is_replaced_for_a_stream() -> None:
    """An idle connection the server closed is dropped, and the stream opens a new one."""
    with FakeServer(lambda b: Reply(text="fine")) as up:
        model = _model(up.url, "loopback")

        async def main() -> str:
            transport = model._transport()
            assert isinstance(transport, LoopbackTransport)

            def hang_up(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
                w.close()

            # an idle connection whose server hangs up on the next request
            closer = await asyncio.start_server(hang_up, "127.0.0.1", 0)
            port = closer.sockets[0].getsockname()[1]
            transport._idle.append(await asyncio.open_connection("127.0.0.1", port))
            events = [e async for e in model.stream(REQ)]
            await transport.aclose()
            closer.close()
            assert events[-1].response is not None
            return events[-1].response.text

        assert asyncio.run(main()) == "fine"
