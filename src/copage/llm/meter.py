"""Usage accounting across calls."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from copage.llm.errors import EmptyReply
from copage.llm.model_types import ChatModel, ChatRequest, ChatResponse, StreamEvent, stream
from copage.llm.wrapper import ModelWrapper


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """A snapshot of a :class:`UsageMeter`."""

    calls: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    saved_usd: float
    unpriced_calls: int


class UsageMeter:
    """Adds up calls, tokens, cost and cache hits.

    Cached replies count as hits: their cost goes to ``saved_usd``, not ``cost_usd``,
    and their tokens are not added (no tokens were spent).
    """

    def __init__(self) -> None:
        self.calls = self.cache_hits = self.unpriced_calls = 0
        self.prompt_tokens = self.completion_tokens = 0
        self.cost_usd = self.saved_usd = 0.0

    def record(self, response: ChatResponse) -> None:
        """Account for one response."""
        self.calls += 1
        if response.cached:
            self.cache_hits += 1
            self.saved_usd += response.cost_usd or 0.0
            return
        self.prompt_tokens += response.usage.prompt_tokens
        self.completion_tokens += response.usage.completion_tokens
        if response.cost_usd is None:
            self.unpriced_calls += 1
        else:
            self.cost_usd += response.cost_usd

    def totals(self) -> UsageTotals:
        """The current totals."""
        return UsageTotals(
            self.calls,
            self.cache_hits,
            self.prompt_tokens,
            self.completion_tokens,
            self.cost_usd,
            self.saved_usd,
            self.unpriced_calls,
        )


class MeteredModel(ModelWrapper):
    """Wraps a model and records every response in a :class:`UsageMeter`."""

    def __init__(self, inner: ChatModel, meter: UsageMeter) -> None:
        super().__init__(inner)
        self.meter = meter

    def __repr__(self) -> str:
        return f"MeteredModel({self.inner!r})"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer and record (an empty reply too: the provider billed it)."""
        try:
            response = await self.inner.complete(request)
        except EmptyReply as e:
            if e.response is not None:
                self.meter.record(e.response)
            raise
        self.meter.record(response)
        return response

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Stream and record the final response (an empty one too)."""
        try:
            async for event in stream(self.inner, request):
                if event.response is not None:
                    self.meter.record(event.response)
                yield event
        except EmptyReply as e:
            if e.response is not None:
                self.meter.record(e.response)
            raise
