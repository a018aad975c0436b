"""A scripted chat model for tests: replies come from a queue you fill.

Example::

    model = ScriptedModel().tool_call("recall", {"page": "p3"}).reply("Peanuts, noted.")
    await model.complete(request)   # -> a recall tool call
    model.requests                  # every request received, in order
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from copage.core.types import ToolCall
from copage.llm.chat_messages import text_of
from copage.llm.errors import ModelError
from copage.llm.model_types import ChatRequest, ChatResponse, Usage

Step = Callable[[ChatRequest], "ChatResponse | str"]


class ScriptExhausted(ModelError):
    """The scripted model was asked for more replies than it was given."""


class ScriptedModel:
    """Answers requests from a queue of replies, tool calls and callables."""

    def __init__(self, *, name: str = "scripted", logprobs: bool = False) -> None:
        self._name = name
        self.logprobs = logprobs
        self.requests: list[ChatRequest] = []
        self._queue: deque[Step] = deque()
        self._ids = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def spec(self) -> str:
        return f"scripted:{self._name}"

    def __repr__(self) -> str:
        return f"ScriptedModel({self._name!r}, {len(self._queue)} queued)"

    @property
    def remaining(self) -> int:
        """Replies still queued."""
        return len(self._queue)

    def reply(self, text: str, *, logprobs: Sequence[float] | None = None) -> ScriptedModel:
        """Queue a text reply."""
        resp = self._response(text, (), logprobs)
        self._queue.append(lambda _req: resp)
        return self

    def tool_call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str,
        *,
        text: str = "",
        id: str | None = None,
    ) -> ScriptedModel:
        """Queue a reply holding one tool call."""
        return self.tool_calls([(name, arguments)], text=text, ids=[id] if id else None)

    def tool_calls(
        self,
        calls: Sequence[tuple[str, Mapping[str, Any] | str]],
        *,
        text: str = "",
        ids: Sequence[str] | None = None,
    ) -> ScriptedModel:
        """Queue a reply holding several tool calls."""
        made = []
        for i, (name, args) in enumerate(calls):
            self._ids += 1
            call_id = ids[i] if ids else f"call_{self._ids}"
            arg_text = args if isinstance(args, str) else json.dumps(dict(args))
            made.append(ToolCall(id=call_id, name=name, arguments=arg_text))
        resp = self._response(text, tuple(made), None)
        self._queue.append(lambda _req: resp)
        return self

    def then(self, step: Step) -> ScriptedModel:
        """Queue a callable that sees the request and returns a response or text."""
        self._queue.append(step)
        return self

    def _response(
        self, text: str, calls: tuple[ToolCall, ...], logprobs: Sequence[float] | None
    ) -> ChatResponse:
        n = max(1, len(text.split()))
        lp = list(logprobs) if logprobs is not None else ([-0.5] * n if self.logprobs else None)
        return ChatResponse(
            text=text,
            tool_calls=calls,
            finish_reason="tool_calls" if calls else "stop",
            usage=Usage(0, n),
            cost_usd=0.0,
            logprobs=lp,
            model=self._name,
        )

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Record the request and answer with the next scripted step."""
        self.requests.append(request)
        if not self._queue:
            last = text_of(request.messages[-1].get("content"))[:80]
            raise ScriptExhausted(
                "scripted",
                f"script exhausted after {len(self.requests) - 1} replies "
                f"(request {len(self.requests)}, last message {last!r})",
            )
        out = self._queue.popleft()(request)
        if isinstance(out, str):
            return self._response(out, (), None)
        if not isinstance(out, ChatResponse):
            raise TypeError(f"scripted step must return ChatResponse or str, got {type(out)}")
        return out
