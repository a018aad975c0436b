"""Builders and normalisation of OpenAI-format chat messages."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from copage.core.types import ToolCall
from copage.llm.model_types import Message


def tool_call_dict(call: ToolCall) -> dict[str, Any]:
    """A :class:`ToolCall` as an OpenAI ``tool_calls`` entry."""
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def assistant_message(text: str, tool_calls: Iterable[ToolCall] = ()) -> dict[str, Any]:
    """An assistant message; tool calls in OpenAI shape."""
    msg: dict[str, Any] = {"role": "assistant", "content": text}
    calls = [tool_call_dict(c) for c in tool_calls]
    if calls:
        msg["tool_calls"] = calls
    return msg


def tool_message(call_id: str, content: str) -> dict[str, Any]:
    """A tool result message answering call ``call_id``."""
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def tool_calls_of(message: Message) -> list[ToolCall]:
    """The tool calls of an assistant message (dicts or :class:`ToolCall` s accepted)."""
    out: list[ToolCall] = []
    for raw in message.get("tool_calls") or ():
        if isinstance(raw, ToolCall):
            out.append(raw)
            continue
        fn = raw.get("function") or {}
        args = fn.get("arguments", "{}")
        if not isinstance(args, str):
            args = json.dumps(args)
        out.append(
            ToolCall(id=str(raw.get("id", "")), name=str(fn.get("name", "")), arguments=args)
        )
    return out


def text_of(content: Any) -> str:
    """The text of a message ``content`` (a string, None, or a list of parts)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
        elif isinstance(part, str):
            parts.append(part)
    return "".join(parts)


def call_names(messages: Iterable[Message]) -> dict[str, str]:
    """Tool call id -> tool name, over all assistant messages."""
    names: dict[str, str] = {}
    for m in messages:
        if m.get("role") == "assistant":
            for c in tool_calls_of(m):
                names[c.id] = c.name
    return names
