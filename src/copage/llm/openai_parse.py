"""Turning OpenAI chat completions (whole or streamed) into :class:`ChatResponse`.

Streaming and non-streaming replies go through the same :class:`Accumulator`:
a whole completion is fed as a single delta.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copage.core.types import ToolCall
from copage.llm.errors import BadResponse, EmptyReply
from copage.llm.model_types import ChatResponse, StreamEvent, ToolCallDelta, Usage
from copage.llm.prices import cost_of


class Accumulator:
    """Collects deltas of one choice and builds the final response."""

    def __init__(self, provider: str, price_model: str) -> None:
        self.provider, self.price_model = provider, price_model
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.logprobs: list[float] | None = None
        self.model = ""
        self.saw_choice = False

    def feed(self, payload: Any, *, whole: bool = False) -> list[StreamEvent]:
        """Feed one chunk (or, with ``whole``, a whole completion); returns the deltas seen.

        Anything not shaped like a completion (an HTML page, ``"message": "oops"``,
        non-numeric usage, ...) raises ``BadResponse``.
        """
        try:
            return self._feed(payload, whole)
        except BadResponse:
            raise
        except (AttributeError, TypeError, ValueError, KeyError, IndexError) as e:
            raise BadResponse(
                self.provider, f"malformed reply ({type(e).__name__}: {str(e)[:120]})"
            ) from None

    def _feed(self, payload: Any, whole: bool) -> list[StreamEvent]:
        if not isinstance(payload, Mapping):
            raise BadResponse(self.provider, f"reply is not a JSON object: {payload!r:.100}")
        self.model = str(payload.get("model") or self.model)
        usage = payload.get("usage")
        if isinstance(usage, Mapping):
            details = usage.get("prompt_tokens_details")
            cached = details.get("cached_tokens") if isinstance(details, Mapping) else 0
            self.usage = Usage(
                int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                int(cached or 0),
            )
        choices = payload.get("choices") or []
        if not isinstance(choices, list):
            raise BadResponse(self.provider, f"'choices' is not a list: {choices!r:.100}")
        if not choices:
            return []
        self.saw_choice = True
        choice = choices[0]
        key = "message" if whole else "delta"
        if not isinstance(choice, Mapping):
            raise BadResponse(self.provider, f"choice is not an object: {choice!r:.100}")
        delta = choice.get(key) or {}
        if not isinstance(delta, Mapping):
            raise BadResponse(self.provider, f"'{key}' is not an object: {delta!r:.100}")
        events: list[StreamEvent] = []
        content = delta.get("content")
        if content:
            if not isinstance(content, str):
                raise BadResponse(self.provider, f"'content' is not text: {content!r:.100}")
            self.text.append(content)
            events.append(StreamEvent("text", text=content))
        calls = delta.get("tool_calls") or []
        if not isinstance(calls, list):
            raise BadResponse(self.provider, f"'tool_calls' is not a list: {calls!r:.100}")
        for pos, tc in enumerate(calls):
            if not isinstance(tc, Mapping):
                raise BadResponse(self.provider, f"tool call is not an object: {tc!r:.100}")
            events.append(self._feed_call(tc, pos if whole else int(tc.get("index", pos))))
        lp = choice.get("logprobs")
        if isinstance(lp, Mapping) and isinstance(lp.get("content"), list):
            self.logprobs = (self.logprobs or []) + [
                float(t["logprob"]) for t in lp["content"]
                if isinstance(t, Mapping) and t.get("logprob") is not None
            ]
        if choice.get("finish_reason"):
            self.finish_reason = str(choice["finish_reason"])
        return events

    def _feed_call(self, tc: Mapping[str, Any], index: int) -> StreamEvent:
        slot = self.calls.setdefault(index, {"id": None, "name": None, "args": []})
        fn = tc.get("function") or {}
        if not isinstance(fn, Mapping):
            raise BadResponse(self.provider, f"tool call 'function' is not an object: {fn!r:.80}")
        if tc.get("id"):
            slot["id"] = str(tc["id"])
        if fn.get("name"):
            slot["name"] = str(fn["name"])
        args = fn.get("arguments") or ""
        if not isinstance(args, str):  # some servers send the arguments as an object
            import json

            args = json.dumps(args, ensure_ascii=False)
        slot["args"].append(args)
        return StreamEvent(
            "tool_call",
            tool_call=ToolCallDelta(index, id=tc.get("id"), name=fn.get("name"), arguments=args),
        )

    def response(self, raw: Any = None) -> ChatResponse:
        """The final response; raises ``BadResponse`` when empty or malformed."""
        if not self.saw_choice:
            raise BadResponse(self.provider, "reply has no choices")
        calls = []
        for i in sorted(self.calls):
            slot = self.calls[i]
            if not slot["name"]:
                raise BadResponse(self.provider, f"tool call {i} has no function name")
            calls.append(
                ToolCall(
                    id=slot["id"] or f"call_{i}",
                    name=slot["name"],
                    arguments="".join(slot["args"]) or "{}",
                )
            )
        text = "".join(self.text)
        response = ChatResponse(
            text=text,
            tool_calls=tuple(calls),
            finish_reason=self.finish_reason,
            usage=self.usage,
            cost_usd=cost_of(self.price_model, self.usage),
            logprobs=self.logprobs,
            model=self.model or self.price_model,
            raw=raw,
        )
        if not text and not calls:
            raise EmptyReply(self.provider, f"empty reply (finish_reason={self.finish_reason!r})",
                             response)
        return response
