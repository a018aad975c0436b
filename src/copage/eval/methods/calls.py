"""A per-probe model wrapper that records every call (offline token count, tool calls)."""

from __future__ import annotations

from copage.core.tokens import Tokenizer, default_tokenizer
from copage.eval.methods.base import CallRecord, request_tokens
from copage.llm.types import ChatModel, ChatRequest, ChatResponse


class Recorder:
    """Forwards requests to ``inner`` and keeps one :class:`CallRecord` per call."""

    def __init__(self, inner: ChatModel, tokenizer: Tokenizer | None = None) -> None:
        self.inner = inner
        self.tokenizer = tokenizer or default_tokenizer()
        self.calls: list[CallRecord] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def spec(self) -> str:
        return self.inner.spec

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer through ``inner`` and record the call."""
        response = await self.inner.complete(request)
        self.calls.append(CallRecord(
            prompt_tokens=request_tokens(request, self.tokenizer),
            provider_prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
            tool_calls=tuple({"name": c.name, "arguments": c.arguments[:300]}
                             for c in response.tool_calls),
            cached=response.cached, cost_usd=response.cost_usd,
        ))
        return response
