"""The upstream: an OpenAI-compatible URL (client's model passes through) or a fixed model."""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx

from copage.llm.adapter import NetworkModel
from copage.llm.errors import ModelError, UpstreamError, error_for_status, redact
from copage.llm.http_model import HttpChatModel, endpoint
from copage.llm.model_types import ChatModel, ChatRequest, ChatResponse, StreamEvent, events_of
from copage.llm.model_types import stream as stream_reply
from copage.llm.transport import Transport, transport_for
from copage.server.error_body import bad_request
from copage.server.metrics import Metrics
from copage.server.proxy_loop import closing
from copage.session.overflow import KnownWindows

DUMMY_KEY = "sk-no-key-required"
MAX_MODELS = 32


class Upstream:
    """Builds (and caches) one chat model per requested model name.

    Args:
        base_url: OpenAI-compatible endpoint (e.g. ``http://127.0.0.1:8080/v1``).
        model: instead, a model spec or :class:`ChatModel` that answers every request.
        api_key: the upstream key (kept private; redacted from errors). A request may
            bring its own (:meth:`model_for`'s ``key``: a tenant's or the client's).
        api: the API ``base_url`` speaks: ``chat``, ``responses`` or ``messages``.
        timeout, retries: per upstream call.
    """

    def __init__(
        self, *, base_url: str | None = None, model: str | ChatModel | None = None,
        api_key: str | None = None, timeout: float = 120.0, retries: int = 0,
        api: str = "chat",
    ) -> None:
        if (base_url is None) == (model is None):
            raise ValueError("give exactly one of base_url or model")
        if base_url:
            parts = urlsplit(base_url)
            base_url = urlunsplit(parts._replace(path=parts.path.rstrip("/"), fragment=""))
        self.base_url = base_url or None
        self.api = api
        self.__key = api_key
        self.timeout, self.retries = timeout, retries
        self._models: OrderedDict[tuple[str, str], ChatModel] = OrderedDict()
        self.windows = KnownWindows()
        """The context windows the upstream's models refused requests for (by spec)."""
        self._fixed: ChatModel | None = None
        self._spec = model if isinstance(model, str) else None
        if isinstance(model, str):
            from copage.llm import get_model

            opts: dict[str, Any] = {"timeout": timeout, "max_retries": retries}
            if api_key:
                opts["api_key"] = api_key
            self._fixed = get_model(model, **opts)
        elif model is not None:
            self._fixed = model
        self._http: httpx.AsyncClient | None = None  # GET /models only
        self._transport: Transport | None = None

    @property
    def fixed(self) -> bool:
        """True when the model is fixed by ``--model``."""
        return self._fixed is not None

    def model_for(self, name: str | None, key: str | None = None) -> ChatModel:
        """The model that answers a request naming ``name``, calling the upstream with
        ``key`` (a tenant's or the client's own) or else the proxy's key. Models are
        cached by name and key; a cache entry holds the key only inside its model."""
        if self._fixed is not None and (key is None or self._spec is None):
            return self._fixed
        if self._fixed is None and not name:
            raise bad_request("model is required", param="model")
        slot = (name or "", _fingerprint(key))
        found = self._models.get(slot)
        if found is None:
            found = self._new_model(name or "", key)
            self._models[slot] = found
            if len(self._models) > MAX_MODELS:
                self._models.popitem(last=False)
        else:
            self._models.move_to_end(slot)
        return found

    def _new_model(self, name: str, own: str | None) -> ChatModel:
        if self._spec is not None:  # --model SPEC with a tenant's own key
            from copage.llm import get_model

            return get_model(self._spec, timeout=self.timeout, max_retries=self.retries,
                             api_key=own)
        assert self.base_url is not None
        base_url = self.base_url
        key = own or self.__key or DUMMY_KEY
        # The SDKs append their path to base_url as text: a query (Azure's
        # ?api-version=) must go to them as their default query instead.
        parts = urlsplit(base_url)
        url = urlunsplit(parts._replace(query=""))
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        if self.api == "responses":
            from copage.llm.responses_model import ResponsesModel

            return _with_query(ResponsesModel(name, base_url=url, api_key=key,
                                              timeout=self.timeout, max_retries=self.retries),
                               query)
        if self.api == "messages":
            from copage.llm.anthropic_model import AnthropicModel

            # the anthropic SDK appends /v1/messages itself
            root = url.removesuffix("/v1")
            return _with_query(AnthropicModel(name, base_url=root, api_key=key,
                                              timeout=self.timeout, max_retries=self.retries),
                               query)
        return HttpChatModel(name, base_url=base_url, transport=self.transport, api_key=key,
                             retries=self.retries)

    def transport(self) -> Transport:
        """The one pooled keep-alive transport for chat calls (created on first use)."""
        if self._transport is None:
            assert self.base_url is not None
            self._transport = transport_for(self.base_url, self.timeout)
        return self._transport

    async def complete(self, model: ChatModel, request: ChatRequest) -> tuple[ChatResponse, float]:
        """One upstream call and its latency in seconds."""
        t0 = time.perf_counter()
        response = await model.complete(request)
        return response, time.perf_counter() - t0

    def stream(self, model: ChatModel, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Stream one upstream call: the model's own streaming, or its whole reply as one
        chunk for a model that cannot stream (:func:`copage.llm.model_types.stream`)."""
        return stream_reply(model, request)

    async def models(self, key: str | None = None) -> dict[str, Any]:
        """``GET /v1/models``: the upstream's list (asked with ``key`` when given, see
        :meth:`model_for`), or the fixed model."""
        if self._fixed is not None:
            return {"object": "list", "data": [
                {"id": self._fixed.name, "object": "model", "created": 0, "owned_by": "copage"}
            ]}
        key = key or self.__key or DUMMY_KEY
        headers = {"authorization": f"Bearer {key}"}
        try:
            if self._http is None:
                self._http = httpx.AsyncClient(timeout=self.timeout)
            assert self.base_url is not None
            r = await self._http.get(endpoint(self.base_url, "models"), headers=headers)
        except httpx.TimeoutException:
            from copage.llm.errors import ModelTimeout

            raise ModelTimeout("upstream", "GET /models timed out") from None
        except httpx.HTTPError as e:
            raise UpstreamError("upstream", f"GET /models failed ({type(e).__name__})") from None
        if r.status_code != 200:
            raise error_for_status("upstream", r.status_code, redact(r.text[:300], key))
        try:
            data = r.json()
        except ValueError:
            raise UpstreamError("upstream", "GET /models returned no JSON") from None
        if not isinstance(data, dict):
            raise UpstreamError("upstream", "GET /models returned no JSON object")
        return data

    async def aclose(self) -> None:
        """Close the pooled client."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        if self._transport is not None:
            await self._transport.aclose()
            self._transport = None


def calls(upstream: Upstream, stream: bool, latencies: list[float], metrics: Metrics
          ) -> Callable[[ChatModel, ChatRequest], AsyncIterator[StreamEvent]]:
    """One call to ``upstream`` as stream events: streamed, or one whole reply as one
    chunk; each call's latency is appended to ``latencies`` and counted in ``metrics``."""
    async def whole(model: ChatModel, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        response, _ = await upstream.complete(model, request)
        for event in events_of(response):
            yield event

    async def call(model: ChatModel, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        t0 = time.perf_counter()
        source = upstream.stream(model, request) if stream else whole(model, request)
        async with closing(source) as events:
            async for event in events:
                if event.kind == "done":
                    latency = time.perf_counter() - t0
                    latencies.append(latency)
                    metrics.inc("copage_upstream_calls_total")
                    metrics.observe_upstream(latency)
                yield event

    return call


def _fingerprint(key: str | None) -> str:
    """A cache slot's name for a key (its digest: the plaintext stays in the model)."""
    return "" if key is None else hashlib.sha256(key.encode("utf-8", "surrogateescape")
                                                 ).hexdigest()


M = TypeVar("M", bound=NetworkModel)


def _with_query(model: M, query: dict[str, str]) -> M:
    """``model`` whose SDK client sends ``query`` with every request."""
    if query:
        make = model._make_client
        model._make_client = lambda: make().with_options(  # type: ignore[method-assign]
            default_query=query)
    return model


__all__ = ["ModelError", "Upstream", "calls"]
