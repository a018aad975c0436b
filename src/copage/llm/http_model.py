"""A chat model behind an OpenAI-compatible URL, posting JSON through a shared transport.

The proxy's ``--upstream URL`` mode posts the JSON body itself instead of going
through the ``openai`` SDK: the SDK's request building and response models cost
about 10 ms per call on the benchmark machine, more than the whole paging work
of a turn. The transport (:mod:`copage.llm.transport`) is one pooled
keep-alive client shared by every model name. Errors map exactly as the SDK adapter's do (timeouts -> ModelTimeout,
5xx and connection failures -> UpstreamError, 429 -> RateLimited with its
Retry-After, 401/403 -> AuthError, other 4xx -> RequestRejected, malformed
replies -> BadResponse), with the key redacted from every message.

:meth:`HttpChatModel.stream` asks the upstream to stream (``"stream": true`` and
``stream_options.include_usage``), reads the server-sent events as they arrive
and yields :class:`~copage.llm.model_types.StreamEvent` s: text and tool-call deltas,
then ``done`` with the whole response, assembled by the same
:class:`~copage.llm.openai_parse.Accumulator` as :meth:`HttpChatModel.complete`.
Failures before the first event are retried like a non-streamed call; once
events have been yielded nothing is retried (they cannot be taken back). An
error event mid-stream, a stream that breaks or stalls for ``timeout`` seconds,
or one that ends before the model finished, raise the same errors as above.
After ``[DONE]`` the end of the body is read in the background, so the connection
goes back to the pool (a new connection per streamed call would cost a TCP, or
TLS, handshake before every first token).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from copage.llm.errors import (
    BadResponse,
    UpstreamError,
    error_for_status,
    redact,
    safe_url,
)
from copage.llm.guard import check_url
from copage.llm.model_types import ChatRequest, ChatResponse, StreamEvent
from copage.llm.openai_model import chat_fields
from copage.llm.openai_parse import Accumulator
from copage.llm.retry import RetryPolicy, call_with_retries, parse_retry_after
from copage.llm.sse import EventTooLarge, events
from copage.llm.transport import RawResponse, RawStream, Transport

PROVIDER = "upstream"
#: After ``[DONE]``, how long the rest of a streamed body may take to arrive (read in
#: the background): a body read to its end keeps its connection for the next call.
DRAIN_GRACE = 2.0
_draining: set[asyncio.Task[None]] = set()


def _background(aw: Coroutine[Any, Any, None]) -> None:
    task = asyncio.ensure_future(aw)
    _draining.add(task)
    task.add_done_callback(_draining.discard)


def request_body(model: str, request: ChatRequest) -> dict[str, Any]:
    """The ``/chat/completions`` JSON body (``extra`` fields merged at the top level)."""
    body = chat_fields(model, request, null_content=False)
    if request.extra:
        body.update(request.extra)
    return body


def endpoint(base_url: str, path: str) -> str:
    """``base_url`` with ``path`` appended to its path, its query kept after it.

    ``https://x.openai.azure.com/openai/deployments/d?api-version=2024-06-01`` and
    ``chat/completions`` give ``.../deployments/d/chat/completions?api-version=...``.
    """
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/" + path.lstrip("/")))


class HttpChatModel:
    """One upstream model name; ``transport()`` gives the shared pooled transport.

    Args:
        model: the model name sent upstream.
        base_url: the OpenAI-compatible base URL (``.../v1``).
        transport: returns the shared transport (created by the owner, bound to its loop).
        api_key: the upstream key (sent as a Bearer token; redacted from errors).
        retries: retries of retryable failures (429, 5xx, timeouts).
    """

    def __init__(
        self, model: str, *, base_url: str, transport: Callable[[], Transport],
        api_key: str, retries: int = 0, rng: random.Random | None = None,
    ) -> None:
        self.model, self.base_url = model, base_url
        self.url = endpoint(base_url, "chat/completions")
        self._transport = transport
        self.__key = api_key
        self._headers = {"authorization": f"Bearer {api_key}",
                         "content-type": "application/json"}
        self.retry = RetryPolicy(max_retries=retries, base_delay=0.2,
                                 rng=rng or random.Random())

    @property
    def name(self) -> str:
        return self.model

    @property
    def spec(self) -> str:
        return f"openai:{self.model}@{safe_url(self.base_url)}"

    def __repr__(self) -> str:
        return f"HttpChatModel({self.spec!r})"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """POST the request; map failures to :class:`ModelError` s (retried per policy)."""
        check_url(self.base_url, PROVIDER)
        content = json.dumps(request_body(self.model, request), separators=(",", ":"),
                             ensure_ascii=False).encode("utf-8", "surrogatepass")
        return await call_with_retries(lambda: self._once(content), self.retry)

    async def _once(self, content: bytes) -> ChatResponse:
        r = await self._transport().post(self.url, content, self._headers)
        if r.status != 200:
            raise error_for_status(PROVIDER, r.status, self._message(r),
                                   parse_retry_after(r.headers))
        try:
            data = json.loads(r.content)
        except ValueError:
            raise BadResponse(PROVIDER, "the reply is not JSON") from None
        acc = Accumulator(PROVIDER, self.model)
        try:
            acc.feed(data, whole=True)
        except (AttributeError, TypeError, ValueError, KeyError) as e:
            raise BadResponse(PROVIDER, f"malformed reply ({type(e).__name__})") from None
        return acc.response()

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Stream the reply: deltas as they arrive, then ``done`` (see module docstring)."""
        check_url(self.base_url, PROVIDER)
        body = request_body(self.model, request)
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        content = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(
            "utf-8", "surrogatepass")
        raw = await call_with_retries(lambda: self._open(content), self.retry)
        acc = Accumulator(PROVIDER, self.model)
        finished = False
        try:
            async for data in events(raw.chunks()):
                if data.strip() == "[DONE]":
                    finished = True
                    break
                try:
                    payload = json.loads(data)
                except ValueError:
                    raise BadResponse(PROVIDER, "a streamed event is not JSON") from None
                if isinstance(payload, dict) and payload.get("error"):
                    raise UpstreamError(PROVIDER, "the upstream failed mid-stream: "
                                        + self._error_text(payload))
                try:
                    deltas = acc.feed(payload)
                except (AttributeError, TypeError, ValueError, KeyError) as e:
                    raise BadResponse(PROVIDER, f"malformed chunk ({type(e).__name__})") from None
                for event in deltas:
                    yield event
        except EventTooLarge as e:
            raise BadResponse(PROVIDER, str(e)) from None
        finally:
            if finished:  # the rest (the body's end) is read in the background
                _background(raw.release(DRAIN_GRACE))
            else:
                await raw.aclose()
        if not finished and acc.finish_reason is None:
            raise UpstreamError(PROVIDER, "the upstream stream ended before the reply did")
        yield StreamEvent("done", response=acc.response())

    async def _open(self, content: bytes) -> RawStream:
        raw = await self._transport().stream(self.url, content, self._headers)
        if raw.status != 200:
            try:
                text = await raw.read(64 * 1024)
            finally:
                await raw.aclose()
            error = RawResponse(raw.status, raw.headers, text)
            raise error_for_status(PROVIDER, raw.status, self._message(error),
                                   parse_retry_after(raw.headers))
        return raw

    def _error_text(self, data: dict[str, Any]) -> str:
        inner = data.get("error")
        msg = inner.get("message") if isinstance(inner, dict) else inner
        return redact(str(msg), self.__key)[:300]

    def _message(self, r: RawResponse) -> str:
        msg = r.content[:2000].decode("utf-8", "replace")
        try:
            data = json.loads(r.content)
        except ValueError:
            data = None
        if isinstance(data, dict):
            inner = data.get("error", data)
            if isinstance(inner, dict) and inner.get("message"):
                msg = str(inner["message"])
        return redact(msg, self.__key)[:300]
