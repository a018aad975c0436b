"""The shared base of model wrappers (cache, meter, concurrency bound)."""

from __future__ import annotations

from copage.llm.model_types import ChatModel


class ModelWrapper:
    """Wraps ``inner`` and passes its ``name`` and ``spec`` through."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def spec(self) -> str:
        return self.inner.spec

    async def aclose(self) -> None:
        """Close the inner model's clients on the running loop (if it has any)."""
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()

    def close(self) -> None:
        """Close the inner model's clients (if it has any)."""
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()
