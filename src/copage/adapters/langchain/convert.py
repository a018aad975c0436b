"""LangChain messages <-> copage turns.

A stored turn keeps the message's id as its turn id, so the paged view can send
the application's own message objects (with their content blocks and metadata)
and rebuild a message from its turn only when the state no longer holds it
(after a restart without a checkpointer).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from copage.core.types import ToolCall, Turn


class TurnArgs(NamedTuple):
    """What :meth:`copage.PagedMemory.add` takes for one message."""

    role: str
    text: str
    meta: dict[str, Any]


def to_turn(message: BaseMessage) -> TurnArgs:
    """The turn for one message (its id becomes the turn id)."""
    if not message.id:
        raise ValueError("CopageMiddleware needs message ids (LangGraph's add_messages "
                         f"reducer sets them); got a {type(message).__name__} without one")
    meta: dict[str, Any] = {"id": message.id}
    text = str(message.text)
    if isinstance(message, AIMessage):
        if message.tool_calls:
            meta["tool_calls"] = [ToolCall(str(c.get("id") or ""), c["name"],
                                           json.dumps(c["args"], ensure_ascii=False))
                                  for c in message.tool_calls]
        return TurnArgs("assistant", text, meta)
    if isinstance(message, ToolMessage):
        meta["tool_call_id"] = message.tool_call_id
        return TurnArgs("tool", text, meta)
    if isinstance(message, SystemMessage):
        return TurnArgs("system", text, meta)
    return TurnArgs("user", text, meta)


def from_turn(turn: Turn) -> AnyMessage:
    """A message rebuilt from a stored turn (text only)."""
    if turn.role == "assistant":
        calls = [{"id": c.id, "name": c.name, "args": _args(c.arguments), "type": "tool_call"}
                 for c in turn.tool_calls]
        return AIMessage(content=turn.text, id=turn.id, tool_calls=calls)
    if turn.role == "tool":
        return ToolMessage(content=turn.text, id=turn.id, tool_call_id=turn.tool_call_id or "")
    return HumanMessage(content=turn.text, id=turn.id)


def _args(arguments: str) -> dict[str, Any]:
    try:
        value = json.loads(arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def without_calls(ai: AIMessage, name: str) -> AIMessage:
    """``ai`` without its calls of tool ``name``."""
    if not any(c["name"] == name for c in ai.tool_calls):
        return ai
    keep = [c for c in ai.tool_calls if c["name"] != name]
    kwargs = dict(ai.additional_kwargs)
    if "tool_calls" in kwargs:
        kwargs["tool_calls"] = [c for c in kwargs["tool_calls"]
                                if (c.get("function") or {}).get("name") != name]
        if not kwargs["tool_calls"]:
            del kwargs["tool_calls"]
    return ai.model_copy(update={"tool_calls": keep, "additional_kwargs": kwargs})
