"""Answering the model's tool calls: the recall tool, and defined errors for bad calls."""

from __future__ import annotations

import json
from typing import Any

from copage.core.types import ToolCall, page_index
from copage.memory import PagedMemory
from copage.session.records import RecallRecord


def _error(call: ToolCall, status: str, message: str, **kw: Any) -> tuple[str, RecallRecord]:
    text = f"error: {message}"
    return text, RecallRecord(call.id, call.name, call.arguments[:500], status, message=text, **kw)


def _parse_args(raw: str) -> dict[str, Any] | None:
    """Arguments as a dict: a JSON object, or a bare JSON string/number taken as the page."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    if isinstance(value, dict):
        return value
    if isinstance(value, str | int) and not isinstance(value, bool):
        return {"page": value}
    return None


def refuse(
    call: ToolCall, cap: int, tool: str | None = None, *, offered: bool = True
) -> tuple[str, RecallRecord]:
    """The answer to a call that is not served: after the per-turn cap was reached, or
    while recall is not offered (``offered=False``). A call of another tool than
    ``tool`` is recorded as ``unknown_tool``."""
    status = "unknown_tool" if tool is not None and call.name != tool else "refused"
    if not offered:
        why = "pages cannot be recalled now; answer with what you have."
    else:
        why = f"the limit of {cap} recall calls per turn is reached; answer now with what you have."
    return _error(call, status, why)


def execute(memory: PagedMemory, call: ToolCall) -> tuple[str, RecallRecord]:
    """Run one tool call; return the tool result text for the model and its record.

    Never raises: unknown tools, arguments that are not a JSON object, unknown
    pages and resident pages all come back as a text the model can act on.
    """
    tool = memory.config.tool_name
    by_query = memory.config.recall_by_query
    form = '{"page": "p3"}' + (' or {"query": "a few words"}' if by_query else "")
    if call.name != tool:
        return _error(
            call, "unknown_tool", f"unknown tool {call.name!r}; the only tool is {tool!r}."
        )
    args = _parse_args(call.arguments)
    if args is None:
        return _error(
            call, "error",
            f"{tool}() arguments must be a JSON object such as {form}; "
            f"got {call.arguments[:60]!r}.",
        )
    page = args.get("page")
    query = args.get("query")
    if page is None and query is None:
        return _error(call, "error", f"{tool}() needs arguments such as {form}.")
    before = set(memory.resident)
    result = memory.recall_result(page, query=query)
    evicted = tuple(sorted(before - set(memory.resident), key=page_index))
    record = RecallRecord(
        call.id, call.name, call.arguments[:500], result.status, page=result.page,
        query=query if isinstance(query, str) else None,
        message=result.text if result.status == "error" else None, evicted=evicted,
    )
    return result.text, record
