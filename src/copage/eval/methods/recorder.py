"""A per-probe model wrapper that records every call (offline token count, tool calls).

With a ``budget`` it also keeps the probe inside it: a call whose prompt would take
the probe's billed tokens (every call's input so far, counted offline) over the
budget is not sent; the wrapper answers it with an empty reply without tool calls
(which ends any tool loop) and records it as ``refused``, so the probe is a
"does not fit" miss and no method ever bills more than the budget.

Each call sent is also split into its billed parts: by ``parts_of`` (a method that
knows its prompt's parts) or else :func:`request_parts`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from copage.core.tokens import Tokenizer, default_tokenizer
from copage.eval.methods.method import CallRecord, request_parts, request_tokens
from copage.llm.errors import BadResponse
from copage.llm.model_types import ChatModel, ChatRequest, ChatResponse, Usage

REFUSED_ANSWER = "(not asked: the probe does not fit in the token budget)"


class Recorder:
    """Forwards requests to ``inner`` and keeps one :class:`CallRecord` per call."""

    def __init__(self, inner: ChatModel, tokenizer: Tokenizer | None = None,
                 budget: int | None = None,
                 parts_of: Callable[[ChatRequest], Mapping[str, int]] | None = None) -> None:
        self.inner = inner
        self.parts_of = parts_of
        self.tokenizer = tokenizer or default_tokenizer()
        self.budget = budget
        self.calls: list[CallRecord] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def spec(self) -> str:
        return self.inner.spec

    @property
    def billed(self) -> int:
        """Prompt tokens of the calls sent so far."""
        return sum(c.prompt_tokens for c in self.calls if not c.refused)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer through ``inner`` and record the call (or refuse it, see the module)."""
        tokens = request_tokens(request, self.tokenizer)
        if self.budget is not None and (self.billed + tokens > self.budget
                                        or any(c.refused for c in self.calls)):
            self.calls.append(CallRecord(tokens, 0, 0, refused=True))
            return ChatResponse(text=REFUSED_ANSWER, tool_calls=(), finish_reason="stop",
                                usage=Usage())
        parts = dict(self.parts_of(request) if self.parts_of is not None
                     else request_parts(request, self.tokenizer))
        try:
            response = await self.inner.complete(request)
        except BadResponse as e:  # a reply came back: the provider billed its input
            got = getattr(e, "response", None) or ChatResponse(
                text="", tool_calls=(), finish_reason=None, usage=Usage())
            self.calls.append(CallRecord(
                prompt_tokens=tokens, provider_prompt_tokens=got.usage.prompt_tokens,
                completion_tokens=got.usage.completion_tokens, cached=got.cached,
                cost_usd=got.cost_usd, parts=parts))
            raise
        self.calls.append(CallRecord(
            prompt_tokens=tokens,
            provider_prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
            tool_calls=tuple({"name": c.name, "arguments": c.arguments[:300]}
                             for c in response.tool_calls),
            cached=response.cached, cost_usd=response.cost_usd, parts=parts,
        ))
        return response
