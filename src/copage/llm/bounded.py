"""Bounded concurrency: at most N requests in flight to the inner model."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator

from copage.llm.model_types import ChatModel, ChatRequest, ChatResponse, StreamEvent, stream
from copage.llm.wrapper import ModelWrapper


class BoundedModel(ModelWrapper):
    """Lets at most ``max_concurrency`` calls reach ``inner`` at once (one semaphore per loop)."""

    def __init__(self, inner: ChatModel, max_concurrency: int) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        super().__init__(inner)
        self.max_concurrency = max_concurrency
        self._sems: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"BoundedModel({self.inner!r}, {self.max_concurrency})"

    def _sem(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._sems.get(loop)
        if sem is None:
            sem = self._sems[loop] = asyncio.Semaphore(self.max_concurrency)
        return sem

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Wait for a slot, then answer."""
        async with self._sem():
            return await self.inner.complete(request)

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """Hold a slot for the whole stream."""
        async with self._sem():
            async for event in stream(self.inner, request):
                yield event
