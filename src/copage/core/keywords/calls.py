"""Tool calls named in a bookmark.

A page of an agent session is mostly tool output (file contents, search results,
logs), whose most frequent words are noise; what a model or a user refers back
to is the call ("the config file we read"). So a page holding tool calls gets,
before its extracted keywords, one label per call: the tool's name and its first
string argument (``read_file auth/config.toml``). Anthropic's context editing
replaces an old tool result by a placeholder; this bookmark still says which call
it was, so the model can recall it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from copage.core.types import ToolCall, Turn

#: Labels per page at most (the extracted keywords follow).
MAX_LABELS = 3


def call_labels(turns: Iterable[Turn], limit: int = MAX_LABELS) -> tuple[str, ...]:
    """``name first-string-argument`` of each distinct tool call of ``turns``, in order."""
    out: list[str] = []
    for turn in turns:
        for call in turn.tool_calls:
            label = _label(call)
            if label not in out:
                out.append(label)
    return tuple(out[:limit])


def _label(call: ToolCall) -> str:
    try:
        args = json.loads(call.arguments)
    except (ValueError, RecursionError):
        args = None
    first = next(_strings(args), "").strip()
    return f"{call.name} {first}" if first else call.name


def _strings(value: Any) -> Iterator[str]:
    """String leaves of a JSON value, depth first (dict values in their order)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
