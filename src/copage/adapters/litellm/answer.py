"""The answer LiteLLM returns, as copage stores it: text and tool calls, whole or streamed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copage.llm.chat_messages import text_of

__all__ = ["Assembled", "answer_of", "last_user", "usage_of"]


def last_user(messages: list[Any]) -> str:
    """The text of the request's latest user message ("" when it has none)."""
    return next((text_of(m.get("content")) for m in reversed(messages)
                 if isinstance(m, Mapping) and m.get("role") == "user"), "")


def answer_of(response: Any) -> tuple[str, list[dict[str, Any]]]:
    """The text and tool calls of a LiteLLM ``ModelResponse`` (first choice)."""
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise ValueError("the response has no choices")
    message = getattr(choices[0], "message", None)
    text = getattr(message, "content", None) or ""
    calls = []
    for c in getattr(message, "tool_calls", None) or ():
        fn = getattr(c, "function", None)
        calls.append({"id": str(getattr(c, "id", "") or ""), "type": "function",
                      "function": {"name": str(getattr(fn, "name", "") or ""),
                                   "arguments": str(getattr(fn, "arguments", "") or "")}})
    return str(text), calls


def usage_of(response: Any) -> tuple[int | None, int | None, str | None]:
    """Input and output tokens of a response (as the provider counted them) and its model."""
    usage = getattr(response, "usage", None)
    return (getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None),
            getattr(response, "model", None))


class Assembled:
    """A streamed answer put together from LiteLLM's chunks (text and tool-call deltas)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.tools: dict[int, dict[str, str]] = {}
        self.usage: tuple[int | None, int | None, str | None] = (None, None, None)

    def feed(self, chunk: Any) -> None:
        """Add one ``ModelResponseStream`` chunk (its first choice's deltas, its usage)."""
        if getattr(chunk, "usage", None) is not None:
            self.usage = usage_of(chunk)
        for choice in getattr(chunk, "choices", None) or ():
            if getattr(choice, "index", 0):
                continue  # the first choice is the answer (n > 1 is not paged)
            delta = getattr(choice, "delta", None)
            content = getattr(delta, "content", None)
            if content:
                self.parts.append(str(content))
            for c in getattr(delta, "tool_calls", None) or ():
                slot = self.tools.setdefault(int(getattr(c, "index", 0) or 0),
                                             {"id": "", "name": "", "arguments": ""})
                fn = getattr(c, "function", None)
                slot["id"] = slot["id"] or str(getattr(c, "id", "") or "")
                slot["name"] += str(getattr(fn, "name", "") or "")
                slot["arguments"] += str(getattr(fn, "arguments", "") or "")

    @property
    def text(self) -> str:
        """The answer's text so far."""
        return "".join(self.parts)

    def calls(self) -> list[dict[str, Any]]:
        """The answer's tool calls, OpenAI shape, in index order."""
        return [{"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": c["arguments"]}}
                for _, c in sorted(self.tools.items())]
