"""How the HTTP model client POSTs: pooled ``httpx``, or a lean keep-alive client for loopback.

Both transports return a :class:`RawResponse` and raise only ``ModelTimeout``
(the call took longer than ``timeout``) or ``UpstreamError`` (connection failed
or the reply was not HTTP), so the caller maps statuses the same way for both.
:meth:`Transport.stream` opens a reply whose body is read as it arrives (a
:class:`RawStream`: server-sent events); there ``timeout`` bounds the wait for
the reply's head and for each piece of the body, not the whole stream.

:class:`LoopbackTransport` exists for latency: on the benchmark machine one
``httpx.AsyncClient`` POST to a loopback server took about 1.2 ms of Python
work, a plain asyncio HTTP/1.1 exchange 0.2 ms; for a model on the same host
(llama.cpp, vLLM, Ollama) that is a third of the proxy's whole added latency.
It speaks only what such servers answer: HTTP/1.1 with ``Content-Length``,
chunked, or close-delimited bodies, no TLS, no proxies, no compression
(it sends no ``Accept-Encoding``). Anything else uses :class:`HttpxTransport`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import NamedTuple, Protocol
from urllib.parse import urlsplit

import httpx

from copage.llm.errors import ModelTimeout, UpstreamError, safe_url
from copage.llm.guard import is_loopback

PROVIDER = "upstream"
MAX_HEAD = 64 * 1024
MAX_IDLE = 64


class RawResponse(NamedTuple):
    """Status, lower-cased headers and the body of one reply."""

    status: int
    headers: Mapping[str, str]
    content: bytes


class RawStream:
    """A reply whose body is read piece by piece (:meth:`chunks`); close it when done.

    Args:
        status, headers: the reply's head (headers lower-cased).
        chunks: yields the body's pieces as they arrive.
        close: releases the connection (kept for reuse only if the body was read to its end).
    """

    def __init__(self, status: int, headers: Mapping[str, str],
                 chunks: AsyncIterator[bytes], close: Callable[[], Awaitable[None]]) -> None:
        self.status, self.headers = status, headers
        self._chunks, self._close = chunks, close

    def chunks(self) -> AsyncIterator[bytes]:
        """The body, piece by piece (``ModelTimeout`` / ``UpstreamError`` on failures)."""
        return self._chunks

    async def read(self, limit: int = 1 << 20) -> bytes:
        """The rest of the body (at most ``limit`` bytes kept), e.g. of an error reply."""
        parts: list[bytes] = []
        size = 0
        async for part in self._chunks:
            if size < limit:
                parts.append(part)
                size += len(part)
        return b"".join(parts)[:limit]

    async def aclose(self) -> None:
        """Release the connection."""
        await self._close()

    async def release(self, grace: float) -> None:
        """Read what is left of the body (for at most ``grace`` seconds), then close:
        a body read to its end leaves the connection reusable (kept alive)."""
        try:
            async with asyncio.timeout(grace):
                async for _ in self._chunks:
                    pass
        except Exception:  # noqa: BLE001, S110 - the connection is simply not reused
            pass
        finally:
            await self._close()


class Transport(Protocol):
    """POSTs a body to a URL (see module docstring for the errors)."""

    async def post(self, url: str, content: bytes, headers: Mapping[str, str]) -> RawResponse:
        """One request and its whole reply."""
        ...

    async def stream(self, url: str, content: bytes, headers: Mapping[str, str]) -> RawStream:
        """One request; the reply's head read, its body left to :meth:`RawStream.chunks`."""
        ...

    async def aclose(self) -> None:
        """Close pooled connections."""
        ...


class HttpxTransport:
    """One long-lived pooled (keep-alive) ``httpx.AsyncClient``."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def post(self, url: str, content: bytes, headers: Mapping[str, str]) -> RawResponse:
        """POST with httpx; timeouts and transport errors mapped."""
        try:
            r = await self.client.post(url, content=content, headers=dict(headers))
        except httpx.TimeoutException:
            raise ModelTimeout(PROVIDER, "POST to the upstream timed out") from None
        except httpx.HTTPError as e:
            raise UpstreamError(PROVIDER, f"POST to the upstream failed ({type(e).__name__})") from None
        return RawResponse(r.status_code, {k.lower(): v for k, v in r.headers.items()},
                           r.content)

    async def stream(self, url: str, content: bytes, headers: Mapping[str, str]) -> RawStream:
        """POST with httpx, the reply's body streamed."""
        request = self.client.build_request("POST", url, content=content, headers=dict(headers))
        try:
            r = await self.client.send(request, stream=True)
        except httpx.TimeoutException:
            raise ModelTimeout(PROVIDER, "POST to the upstream timed out") from None
        except httpx.HTTPError as e:
            raise UpstreamError(PROVIDER, f"POST to the upstream failed ({type(e).__name__})") from None

        async def chunks() -> AsyncIterator[bytes]:
            try:
                async for part in r.aiter_bytes():
                    yield part
            except httpx.TimeoutException:
                raise ModelTimeout(PROVIDER, "the upstream stream stalled") from None
            except httpx.HTTPError as e:
                raise UpstreamError(PROVIDER, f"the upstream stream broke ({type(e).__name__})"
                                    ) from None

        return RawStream(r.status_code, {k.lower(): v for k, v in r.headers.items()},
                         chunks(), r.aclose)

    async def aclose(self) -> None:
        """Close the client."""
        await self.client.aclose()


_Conn = tuple[asyncio.StreamReader, asyncio.StreamWriter]


class LoopbackTransport:
    """Keep-alive HTTP/1.1 over asyncio streams to one ``http://`` loopback host:port."""

    def __init__(self, base_url: str, timeout: float) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not is_loopback(parts.hostname or ""):
            raise ValueError("LoopbackTransport needs an http:// loopback URL, got "
                             f"{safe_url(base_url)!r}")
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.netloc, self.timeout = parts.netloc, timeout
        self._idle: list[_Conn] = []

    def _request(self, url: str, content: bytes, headers: Mapping[str, str]) -> bytes:
        parts = urlsplit(url)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        head = [f"POST {path} HTTP/1.1", f"host: {self.netloc}",
                f"content-length: {len(content)}"]
        head += [f"{k}: {v}" for k, v in headers.items() if k.lower() != "content-length"]
        return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + content

    async def stream(self, url: str, content: bytes, headers: Mapping[str, str]) -> RawStream:
        """POST ``content`` (on an idle connection if one is left, else a new one); the
        body is read as it arrives."""
        request = self._request(url, content, headers)
        errors = (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError)
        try:
            async with asyncio.timeout(self.timeout):
                head = None
                while self._idle and head is None:
                    reader, writer = self._idle.pop()
                    if writer.is_closing() or reader.at_eof():
                        writer.close()
                        continue
                    head = await self._open(reader, writer, request, reused=True)
                if head is None:
                    reader, writer = await asyncio.open_connection(self.host, self.port,
                                                                   limit=MAX_HEAD)
                    head = await self._open(reader, writer, request, reused=False)
                assert head is not None
                status, hdrs, keep = head
        except TimeoutError:
            raise ModelTimeout(PROVIDER, f"POST to the upstream timed out after {self.timeout}s") from None
        except errors as e:
            raise UpstreamError(PROVIDER, f"POST to the upstream failed ({type(e).__name__})") from None
        done = {"body": False}

        async def chunks() -> AsyncIterator[bytes]:
            try:
                async for part in _body_parts(status, hdrs, reader, self.timeout):
                    yield part
                done["body"] = True
            except TimeoutError:
                raise ModelTimeout(PROVIDER, f"the upstream sent nothing for {self.timeout}s"
                                   ) from None
            except errors as e:
                raise UpstreamError(PROVIDER, f"the upstream stream broke ({type(e).__name__})"
                                    ) from None

        async def close() -> None:
            if done["body"] and keep and len(self._idle) < MAX_IDLE and not writer.is_closing():
                self._idle.append((reader, writer))
            else:
                writer.close()

        return RawStream(status, hdrs, chunks(), close)

    async def _open(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    request: bytes, *, reused: bool) -> tuple[int, dict[str, str], bool] | None:
        """Send the request and read the reply's head; None if a reused connection had
        been closed by the server (nothing was processed: try another)."""
        try:
            writer.write(request)
            await writer.drain()
            try:
                first = await reader.readuntil(b"\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                if reused:
                    writer.close()
                    return None
                raise
            return await _read_head(first, reader)
        except BaseException:
            writer.close()
            raise

    async def post(self, url: str, content: bytes, headers: Mapping[str, str]) -> RawResponse:
        """POST ``content`` and read the whole reply (the :meth:`stream` path, read to its
        end within ``timeout`` seconds, so the connection is kept for the next request)."""
        try:
            async with asyncio.timeout(self.timeout):
                raw = await self.stream(url, content, headers)
                try:
                    body = b"".join([part async for part in raw.chunks()])
                finally:
                    await raw.aclose()
        except TimeoutError:
            raise ModelTimeout(PROVIDER, f"POST to the upstream timed out after {self.timeout}s") from None
        return RawResponse(raw.status, raw.headers, body)

    async def aclose(self) -> None:
        """Close idle connections."""
        while self._idle:
            self._idle.pop()[1].close()


async def _read_head(first: bytes, reader: asyncio.StreamReader
                     ) -> tuple[int, dict[str, str], bool]:
    """Status, headers and keep-alive of a reply, after its status line."""
    version, _, rest = first.decode("latin-1").strip().partition(" ")
    if not version.startswith("HTTP/1."):
        raise ValueError("not an HTTP/1.x reply")
    status = int(rest.split(" ", 1)[0])
    headers: dict[str, str] = {}
    while (line := await reader.readuntil(b"\r\n")) != b"\r\n":
        name, sep, value = line.decode("latin-1").partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    if not ("chunked" in headers.get("transfer-encoding", "").lower()
            or "content-length" in headers or status in (204, 304) or 100 <= status < 200):
        keep = False  # close-delimited
    return status, headers, keep


async def _body_parts(status: int, headers: Mapping[str, str], reader: asyncio.StreamReader,
                      timeout: float) -> AsyncIterator[bytes]:
    """The body's pieces as they arrive, each within ``timeout`` seconds."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            async with asyncio.timeout(timeout):
                size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip(), 16)
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":
                        pass  # trailers
                    return
                part = await reader.readexactly(size)
                await reader.readexactly(2)
            yield part
    elif "content-length" in headers:
        left = int(headers["content-length"])
        while left > 0:
            async with asyncio.timeout(timeout):
                part = await reader.read(min(left, 65536))
            if not part:
                raise asyncio.IncompleteReadError(b"", left)
            left -= len(part)
            yield part
    elif status in (204, 304) or 100 <= status < 200:
        return
    else:
        while True:
            async with asyncio.timeout(timeout):
                part = await reader.read(65536)
            if not part:
                return
            yield part


def transport_for(base_url: str, timeout: float) -> Transport:
    """The lean client for ``http://`` loopback upstreams, else pooled httpx."""
    parts = urlsplit(base_url)
    if parts.scheme == "http" and is_loopback(parts.hostname or ""):
        return LoopbackTransport(base_url, timeout)
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=MAX_IDLE,
                          keepalive_expiry=30.0)
    return HttpxTransport(httpx.AsyncClient(timeout=timeout, limits=limits))
