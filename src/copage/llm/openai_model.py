"""The OpenAI-compatible adapter (official ``openai`` SDK, v1+ API).

One adapter serves OpenAI, DeepSeek, GLM, OpenRouter and local servers (vLLM,
Ollama, LM Studio, llama.cpp) through ``base_url``.

Assistant messages holding only tool calls are sent with ``content: null`` to
hosted APIs (the OpenAI reference shape) and with ``content: ""`` to any custom
``base_url``, because some local chat templates (llama.cpp's jinja ones) fail
on null content. ``null_content=`` overrides the choice.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from types import ModuleType
from typing import Any

import openai

from copage.llm.adapter import NetworkModel, resolve_key, sdk_payload
from copage.llm.chat_messages import tool_call_dict, tool_calls_of
from copage.llm.errors import RequestRejected, safe_url
from copage.llm.model_types import ChatRequest, ChatResponse, Message, StreamEvent
from copage.llm.openai_parse import Accumulator
from copage.llm.params import ParamRule, learn_from_error, param_rule

OPENAI_URL = "https://api.openai.com/v1"
log = logging.getLogger("copage.llm")


def chat_fields(
    model: str, request: ChatRequest, *, null_content: bool, rule: ParamRule | None = None
) -> dict[str, Any]:
    """The standard ``/chat/completions`` fields of a request (``extra`` not included);
    shared by the SDK adapter and the proxy's direct HTTP upstream. ``rule`` (default:
    :func:`~copage.llm.params.param_rule` of ``model``) says which fields the model takes."""
    rule = rule or param_rule(model)
    body: dict[str, Any] = {
        "model": model,
        "messages": to_openai_messages(request.messages, null_content=null_content),
    }
    if request.tools:
        body["tools"] = [dict(t) for t in request.tools]
    if request.tool_choice is not None:
        body["tool_choice"] = request.tool_choice
    if request.temperature is not None and rule.temperature:
        body["temperature"] = request.temperature
    if request.max_tokens is not None:
        body[rule.max_tokens_field] = request.max_tokens
    if request.logprobs and rule.logprobs:
        body["logprobs"] = True
        # llama.cpp's server returns logprobs only when top_logprobs is set too;
        # OpenAI accepts it (one alternative per token costs nothing extra).
        body["top_logprobs"] = 1
    return body


def to_openai_messages(messages: Sequence[Message], *, null_content: bool) -> list[dict[str, Any]]:
    """Copy messages for the wire, fixing the content of tool-call-only assistant turns."""
    out = []
    for m in messages:
        msg = dict(m)
        if msg.get("role") == "assistant" and msg.get("tool_calls"):
            msg["tool_calls"] = [tool_call_dict(c) for c in tool_calls_of(msg)]
            if not msg.get("content"):
                msg["content"] = None if null_content else ""
        out.append(msg)
    return out


class OpenAIModel(NetworkModel):
    """Chat model behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(
        self,
        model: str,
        *,
        provider: str = "openai",
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        hosted: bool | None = None,
        null_content: bool | None = None,
        stream_usage: bool = True,
        params: ParamRule | None = None,
        spec: str | None = None,
        **options: Any,
    ) -> None:
        url = (base_url or OPENAI_URL).rstrip("/")
        key = resolve_key(provider, api_key, api_key_env, url, OPENAI_URL)
        hosted = (base_url is None) if hosted is None else hosted
        self.null_content = hosted if null_content is None else null_content
        self.stream_usage = stream_usage
        self.params = params or param_rule(model)
        spec = spec or (f"{provider}:{model}" + (f"@{safe_url(url)}" if base_url else ""))
        super().__init__(
            provider=provider, model=model, base_url=url, spec=spec, api_key=key, **options
        )

    def _sdk(self) -> ModuleType:
        return openai

    def _make_client(self) -> Any:
        return openai.AsyncOpenAI(
            api_key=self._api_key(), base_url=self.base_url, timeout=self.timeout, max_retries=0
        )

    def body(self, request: ChatRequest, *, stream: bool = False) -> dict[str, Any]:
        """The keyword arguments sent to ``chat.completions.create``."""
        kw = chat_fields(self.model, request, null_content=self.null_content, rule=self.params)
        if request.extra and "top_logprobs" in request.extra:
            kw.pop("top_logprobs", None)  # the caller's value goes in extra_body
        if request.extra:
            kw["extra_body"] = dict(request.extra)
        if stream:
            kw["stream"] = True
            if self.stream_usage:
                kw["stream_options"] = {"include_usage": True}
        return kw

    async def _create(self, request: ChatRequest, *, stream: bool = False) -> Any:
        """``chat.completions.create`` with retries; on a 400 naming a parameter the model
        does not take (``max_tokens``, ``temperature``), the rule is fixed and the call
        made once more (see :mod:`copage.llm.params`)."""
        while True:  # each fix changes the rule for good, so this ends
            kw = self.body(request, stream=stream)

            async def call(kw: dict[str, Any] = kw) -> Any:
                return await self._client().chat.completions.create(**kw)

            try:
                return await self._send(call)
            except RequestRejected as e:
                fixed = learn_from_error(self.params, str(e))
                if fixed is None:
                    raise
                log.warning("%s: %s; sending %s from now on", self.spec, str(e)[:160], fixed)
                self.params = fixed

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer one request (retried on 429/5xx/timeouts)."""
        completion = await self._create(request)
        acc = Accumulator(self.provider, self.model)
        acc.feed(sdk_payload(completion), whole=True)
        return acc.response(raw=completion)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Stream text and tool-call deltas; the last event holds the full response."""
        chunks = await self._create(request, stream=True)
        acc = Accumulator(self.provider, self.model)
        try:
            async for chunk in chunks:
                for event in acc.feed(sdk_payload(chunk)):
                    yield event
        except self._failures() as e:
            raise self._error(e) from None
        yield StreamEvent("done", response=acc.response())
