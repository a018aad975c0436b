"""Agents SDK input items <-> copage turns.

Each stored turn keeps its item (``meta["item"]``), so the paged view returns
the SDK's own items; reasoning items ride on the item that follows them
(``meta["before"]``), so a page boundary never separates them. Calls (an item
type ending in ``_call`` with a ``call_id``) become assistant turns with a tool
call, their outputs tool turns, so copage's pages never split a call from its
output.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from copage.core.types import ToolCall, Turn

Item = dict[str, Any]


class TurnArgs(NamedTuple):
    """What :meth:`copage.PagedMemory.add` takes for one item."""

    role: str
    text: str
    meta: dict[str, Any]


def content_text(content: Any) -> str:
    """The text of a message's content: a string or a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [str(p.get("text") or p.get("refusal") or "") for p in content
                 if isinstance(p, dict)]
        return "\n".join(p for p in parts if p)
    return ""


def to_turn(item: Item, before: list[Item]) -> TurnArgs:
    """The turn for one item (``before``: reasoning items that preceded it)."""
    meta: dict[str, Any] = {"item": item}
    if before:
        meta["before"] = before
    kind = str(item.get("type") or "message")
    if kind == "message":
        role = item.get("role")
        text = content_text(item.get("content"))
        return TurnArgs("assistant" if role == "assistant" else "user", text, meta)
    call_id = item.get("call_id")
    if kind.endswith("_call_output") and call_id:
        output = item.get("output")
        text = output if isinstance(output, str) else content_text(output) or json.dumps(output)
        return TurnArgs("tool", text, {**meta, "tool_call_id": str(call_id)})
    if kind.endswith("_call") and call_id:
        args = item.get("arguments", item.get("input", ""))
        args = args if isinstance(args, str) else json.dumps(args)
        name = str(item.get("name") or kind)
        return TurnArgs("assistant", "", {**meta, "tool_calls": [ToolCall(str(call_id), name,
                                                                            args)]})
    return TurnArgs("assistant", json.dumps(item, ensure_ascii=False)[:2000], meta)


def items_of(turn: Turn) -> list[Item]:
    """The items a stored turn stands for (its reasoning items, then its item)."""
    item = turn.meta.get("item")
    if not isinstance(item, dict):
        return _rebuilt(turn)
    before = turn.meta.get("before")
    return [*(before if isinstance(before, list) else []), item]


def _rebuilt(turn: Turn) -> list[Item]:
    """Items for a turn stored without them (e.g. added through PagedMemory)."""
    if turn.role == "tool":
        return [{"type": "function_call_output", "call_id": turn.tool_call_id or "",
                 "output": turn.text}]
    if turn.role == "assistant" and turn.tool_calls:
        return [{"type": "function_call", "call_id": c.id, "name": c.name,
                 "arguments": c.arguments} for c in turn.tool_calls]
    return [{"role": "assistant" if turn.role == "assistant" else "user", "content": turn.text}]
