"""Streaming text out while holding back what may be a recall call written as text.

Models write calls into their text: ``RECALL p3`` (the text protocol, or a small
model imitating it), ``<tool_call>{...}</tool_call>`` (Qwen/Hermes output a
server did not parse), ``{"name": "recall", ...}``. Such text must never reach
the user or the stored answer, but everything else should stream as it comes.

:class:`CallTextFilter` releases text up to the first *marker* (the tool name as
a word, ``TOOL``, ``<tool_call``, or ``{"name"``-like JSON) and holds the rest.
A word marker is resolved at the end of its line: if the line holds no call
(:func:`copage.llm.textproto.parse_reply`), it is released and scanning goes on;
once a call is seen, or for a JSON/tag marker, everything after it is held until
the reply ends. A possible marker cut at the end of a chunk (``"RE"``) is held
until the next chunk decides. At the end, the caller parses the held text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from copage.core.types import ToolCall, normal_page_id
from copage.llm.model_types import ToolSpec
from copage.llm.textproto import parse_reply

# ``{{"name"``: Qwen2.5's template shows calls in doubled braces, and the model copies them.
_JSONISH = r'\{(?:\s*\{)?\s*"(?:name|tool|function)"'
# A reply may be only a page id ("p3"): hold a short reply that could still be one.
_ID_PREFIX = re.compile(r"[\s`*\[(\"']*(?:[pP]\d{0,9})?[\s`*\])\"'.]*")
# A whole reply that is only a page id: "p12", "`p12`", "[p12]", "**p12**."
_BARE_ID = re.compile(r"[\s`*\[(\"']*([pP]\d{1,9})[\s`*\])\"'.]*")


def recall_stub(name: str) -> dict[str, Any]:
    """A minimal recall schema for parsing call-shaped text when recall is not offered."""
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": {"page": {"type": "string"}}}}}


class TextCalls(NamedTuple):
    """What :func:`text_calls` found: the recall calls, and the text that is not a call."""

    calls: list[ToolCall]
    rest: str


def text_calls(held: str, tools: Sequence[ToolSpec], tool_name: str, *, alone: bool,
               bare_id: str) -> TextCalls:
    """Recall calls written in ``held`` (text a :class:`CallTextFilter` held back, or a
    whole reply), and the held text that is not a call.

    Args:
        held: the text to look at.
        tools: the tool schemas calls are parsed against.
        tool_name: the recall tool's name (calls of other tools are dropped).
        alone: ``held`` is all the reply said, so a reply that is only a page id
            (``p1``, small models' way to recall) is a call.
        bare_id: the call id given to such a bare page id.
    """
    if not held.strip():
        return TextCalls([], held)
    parsed = parse_reply(held, tools)
    if not parsed.tool_calls:
        bare = _BARE_ID.fullmatch(held) if alone else None
        if bare:
            args = json.dumps({"page": normal_page_id(bare.group(1))})
            return TextCalls([ToolCall(bare_id, tool_name, args)], "")
        return TextCalls([], held)
    return TextCalls([c for c in parsed.tool_calls if c.name == tool_name], parsed.text)


class CallTextFilter:
    """Splits a streamed reply into text safe to show now and text held back."""

    def __init__(self, tools: Sequence[ToolSpec], tool_name: str) -> None:
        self.tools = tools
        name = re.escape(tool_name)
        self._marker = re.compile(
            rf"(?i)(?P<tag><tool_call)|(?P<json>{_JSONISH})|\b(?P<word>{name}|tool)\b"
        )
        self._words = (tool_name.lower(), "tool", "<tool_call", '{"name"', '{{"name"', '{"tool"',
                       '{"function"')
        self.buffer = ""  # held text, not released yet
        self.released = 0  # characters of the reply released so far
        self._stuck = False  # a call (or a JSON/tag marker) was seen: hold to the end

    def feed(self, text: str) -> str:
        """Add a chunk; return the text that can be shown now."""
        self.buffer += text
        if self._stuck:
            return ""
        if not self.released and _ID_PREFIX.fullmatch(self.buffer):
            return ""  # the reply so far could be a bare page id: wait
        out: list[str] = []
        while True:
            m = self._marker.search(self.buffer)
            if m is None:
                keep = self._partial_tail(self.buffer)
                cut = len(self.buffer) - keep
                out.append(self.buffer[:cut])
                self.buffer = self.buffer[cut:]
                break
            out.append(self.buffer[: m.start()])
            self.buffer = self.buffer[m.start() :]
            if m.group("word") is None:
                self._stuck = True
                break
            line_end = self.buffer.find("\n")
            if line_end < 0:
                break  # the line is not complete yet: wait
            line = self.buffer[: line_end + 1]
            if parse_reply(line, self.tools).tool_calls:
                self._stuck = True
                break
            # No call on this line: release it, past the marker.
            out.append(line)
            self.buffer = self.buffer[line_end + 1 :]
        shown = "".join(out)
        self.released += len(shown)
        return shown

    def _partial_tail(self, text: str) -> int:
        """Length of the longest suffix of ``text`` that may begin a marker."""
        low = text[-12:].lower()
        best = 0
        for word in self._words:
            for k in range(min(len(word) - 1, len(low)), 0, -1):
                if low.endswith(word[:k]):
                    best = max(best, k)
                    break
        return best

    def held(self) -> str:
        """The text held back (call it when the reply has ended)."""
        return self.buffer
