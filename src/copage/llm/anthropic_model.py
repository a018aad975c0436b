"""The Anthropic adapter (official ``anthropic`` SDK, Messages API).

Anthropic has no logprobs: ``ChatResponse.logprobs`` is always None. Streaming
uses the generic one-chunk fallback. ``temperature`` goes in the request body
directly (the 2.x SDK dropped the keyword argument).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import anthropic

from copage.llm.anthropic_convert import (
    from_anthropic,
    to_anthropic_messages,
    to_anthropic_tool_choice,
    to_anthropic_tools,
)
from copage.llm.base import NetworkModel, resolve_key
from copage.llm.errors import safe_url
from copage.llm.types import ChatRequest, ChatResponse

ANTHROPIC_URL = "https://api.anthropic.com"


class AnthropicModel(NetworkModel):
    """Chat model behind Anthropic's ``/v1/messages``."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        default_max_tokens: int = 1024,
        spec: str | None = None,
        **options: Any,
    ) -> None:
        url = (base_url or ANTHROPIC_URL).rstrip("/")
        key = resolve_key("anthropic", api_key, api_key_env, url, ANTHROPIC_URL)
        self.default_max_tokens = default_max_tokens
        spec = spec or (f"anthropic:{model}" + (f"@{safe_url(url)}" if base_url else ""))
        super().__init__(
            provider="anthropic", model=model, base_url=url, spec=spec, api_key=key, **options
        )

    def _sdk(self) -> ModuleType:
        return anthropic

    def _make_client(self) -> Any:
        return anthropic.AsyncAnthropic(
            api_key=self._api_key(), base_url=self.base_url, timeout=self.timeout, max_retries=0
        )

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """The keyword arguments sent to ``messages.create``."""
        system, messages = to_anthropic_messages(request.messages, tools=bool(request.tools))
        if not messages:
            raise ValueError("anthropic: the request has no user or assistant message")
        kw: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "max_tokens": request.max_tokens or self.default_max_tokens,
        }
        if system:
            kw["system"] = system
        if request.tools:
            kw["tools"] = to_anthropic_tools(request.tools)
        choice = to_anthropic_tool_choice(request.tool_choice)
        if choice is not None and request.tools:
            kw["tool_choice"] = choice
        extra = dict(request.extra)
        if request.temperature is not None:
            # anthropic SDK 2.x has no `temperature` argument; send it in the body
            extra.setdefault("temperature", request.temperature)
        if extra:
            kw["extra_body"] = extra
        return kw

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer one request (retried on 429/5xx/529/timeouts)."""
        kw = self.body(request)

        async def call() -> Any:
            return await self._client().messages.create(**kw)

        message = await self._send(call)
        dump = getattr(message, "model_dump", None)
        data = dump(warnings=False) if dump is not None else message
        return from_anthropic(data, self.provider, self.model, message)
