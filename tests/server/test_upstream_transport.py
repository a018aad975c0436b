"""The upstream transports (lean loopback HTTP/1.1 and pooled httpx) and the multi-worker socket."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from copage.llm.errors import ModelTimeout, RateLimited, UpstreamError
from copage.llm.fake_server import FakeServer, Reply
from copage.llm.http_model import HttpChatModel
from copage.llm.model_types import ChatRequest
from copage.llm.transport import (
    HttpxTransport,
    LoopbackTransport,
    RawResponse,
    Transport,
    transport_for,
)
from copage.server.launch import _NoDelayConfig

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
OK = json.dumps({"model": "m", "choices": [{"message": {"content": "hi"},
                                            "finish_reason": "stop"}]}).encode()


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    size = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length"))
    return await reader.readexactly(size)


async def _serve(handler: Handler, fn: Callable[[str], Awaitable[Any]]) -> Any:
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        return await fn(f"http://127.0.0.1:{port}/v1")
    finally:
        server.close()


def test_loopback_transport_reads_all_body_framings() -> None:
    replies = [
        b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(OK), OK),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
         b"6;ext=1\r\n world\r\n0\r\nx-trailer: 1\r\n\r\n"),
        b"HTTP/1.0 429 Too Many\r\nRetry-After: 7\r\n\r\nslow down",  # close-delimited
    ]
    conns: list[int] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conns.append(1)
        while replies:
            try:
                await _read_request(reader)
            except asyncio.IncompleteReadError:
                break
            reply = replies.pop(0)
            writer.write(reply)
            await writer.drain()
            if reply.startswith(b"HTTP/1.0"):
                break
        writer.close()

    async def run(url: str) -> list[RawResponse]:
        t = LoopbackTransport(url, timeout=5)
        out = [await t.post(url + "/chat/completions", b"{}", {"x-a": "1"}) for _ in range(3)]
        await t.aclose()
        return out

    a, b, c = asyncio.run(_serve(handler, run))
    assert (a.status, json.loads(a.content)["model"]) == (200, "m")
    assert (b.status, b.content) == (200, b"hello world")
    assert (c.status, c.headers["retry-after"], c.content) == (429, "7", b"slow down")
    assert len(conns) == 1, "keep-alive: all three on one connection"


def test_loopback_transport_retries_a_dropped_idle_connection() -> None:
    seen: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await _read_request(reader))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()  # keep-alive promised, but the server closes the connection

    async def run(url: str) -> list[bytes]:
        t = LoopbackTransport(url, timeout=5)
        out = [(await t.post(url + "/x", b"%d" % i, {})).content for i in range(3)]
        await t.aclose()
        return out

    assert asyncio.run(_serve(handler, run)) == [b"ok"] * 3
    assert seen == [b"0", b"1", b"2"], "each request processed exactly once"


def test_loopback_transport_errors_map() -> None:
    async def slow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        await asyncio.sleep(2)

    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"SSH-2.0-nope\r\n\r\n")
        writer.close()

    async def post(url: str, timeout: float = 5) -> Any:
        return await LoopbackTransport(url, timeout=timeout).post(url + "/x", b"{}", {})

    with pytest.raises(ModelTimeout, match="timed out"):
        asyncio.run(_serve(slow, lambda url: post(url, 0.2)))
    with pytest.raises(UpstreamError, match="ValueError"):
        asyncio.run(_serve(garbage, post))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    with pytest.raises(UpstreamError, match="failed"):
        asyncio.run(post(dead))
    with pytest.raises(ValueError, match="loopback"):
        LoopbackTransport("https://api.example.com/v1", 5)


def test_transport_choice() -> None:
    assert isinstance(transport_for("http://127.0.0.1:8080/v1", 5), LoopbackTransport)
    assert isinstance(transport_for("http://localhost:8080/v1", 5), LoopbackTransport)
    other = transport_for("https://api.example.com/v1", 5)
    assert isinstance(other, HttpxTransport)
    asyncio.run(other.aclose())


@pytest.mark.parametrize("kind", ["loopback", "httpx"])
def test_http_model_over_both_transports(kind: str) -> None:
    with FakeServer(lambda body: Reply(text="pong")) as up:
        async def run() -> tuple[str, str]:
            transport: Transport = (LoopbackTransport(up.url, 5) if kind == "loopback"
                                    else HttpxTransport(httpx.AsyncClient(timeout=5)))
            model = HttpChatModel("m", base_url=up.url, transport=lambda: transport,
                                  api_key="sk-upstream-xyz-123456")
            req = ChatRequest(messages=({"role": "user", "content": "ping"},),
                              temperature=0.5, extra={"seed": 3})
            ok = await model.complete(req)
            up.responder = lambda body: Reply(status=429, error="key sk-upstream-xyz-123456")
            with pytest.raises(RateLimited) as info:
                await model.complete(req)
            await transport.aclose()
            return ok.text, str(info.value)

        text, err = asyncio.run(run())
        assert text == "pong" and "sk-upstream-xyz" not in err
        body = up.received[0]
        assert (body["model"], body["temperature"], body["seed"]) == ("m", 0.5, 3)
        assert up.headers[0]["authorization"] == "Bearer sk-upstream-xyz-123456"


def test_worker_socket_has_tcp_nodelay() -> None:
    config = _NoDelayConfig("copage.server.app:app_from_env", factory=True, host="127.0.0.1",
                            port=0, workers=2)
    sock = config.bind_socket()
    try:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        sock.listen()
        client = socket.create_connection(sock.getsockname())
        conn, _ = sock.accept()  # Linux copies TCP_NODELAY to accepted sockets
        assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
        conn.close()
        client.close()
    finally:
        sock.close()
