"""Value types of the paging core: turns, pages and bookmarks.

All values are frozen dataclasses; nothing here touches files, clocks or models.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PageId = str
"""A page id such as ``"p3"`` (1-based, in order of closing)."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call made by an assistant turn (OpenAI shape, arguments as JSON text)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Turn:
    """One message of a conversation.

    Attributes:
        id: stable id, e.g. LoCoMo's ``"D3:12"`` or ``"t17"``.
        role: ``user``, ``assistant``, ``system`` or ``tool``.
        text: the message text ("" for an assistant turn holding only tool calls).
        speaker: display name (LoCoMo speaker), defaults to the role when rendered.
        timestamp: free-form date/time text (LoCoMo session date), if known.
        session: 1-based session number, if the conversation has sessions.
        tool_calls: tool calls of an assistant turn.
        tool_call_id: for a ``tool`` turn, the id of the call it answers.
        meta: anything else (image captions, ...), JSON-serialisable.
    """

    id: str
    role: str
    text: str
    speaker: str | None = None
    timestamp: str | None = None
    session: int | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The name shown before the text in page text."""
        return self.speaker or self.role


def render_turn(turn: Turn) -> str:
    """One line of page text: ``Name: text`` (tool calls and results made readable)."""
    if turn.role == "tool":
        return f"[tool result {turn.tool_call_id or ''}]: {turn.text}"
    text = turn.text
    caption = turn.meta.get("blip_caption") if turn.meta else None
    if caption:
        text = f"{text} [shares an image: {caption}]".strip()
    if turn.tool_calls:
        calls = "; ".join(f"{c.name}({c.arguments})" for c in turn.tool_calls)
        text = f"{text} [calls {calls}]".strip()
    return f"{turn.name}: {text}"


def with_session_heads(turns: Sequence[Turn], after: Turn | None = None
                       ) -> Iterator[tuple[str | None, Turn]]:
    """Each turn with the session header to write before it (``(session 3, 8 May,
    2023)``) where the session or date changes, else None; ``after``: the turn shown
    just before them (its session's header then is not repeated)."""
    last: tuple[int | None, str | None] | None = (
        None if after is None else (after.session, after.timestamp))
    for t in turns:
        key = (t.session, t.timestamp)
        head: str | None = None
        if key != last and (t.session is not None or t.timestamp):
            name = f"session {t.session}" if t.session is not None else "session"
            head = f"({name}, {t.timestamp})" if t.timestamp else f"({name})"
        last = key
        yield head, t


def render_turns(turns: tuple[Turn, ...] | list[Turn], after: Turn | None = None) -> str:
    """Page text: turn lines, with a session header whenever the session or date changes
    (from ``after``, the turn shown just before, when given).

    Session dates are kept because temporal questions need them.
    """
    lines: list[str] = []
    for head, t in with_session_heads(turns, after):
        if head is not None:
            lines.append(head)
        lines.append(render_turn(t))
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Page:
    """A closed run of turns.

    Attributes:
        id: ``"p1"``, ``"p2"``, ... in order.
        index: 0-based position (``id == f"p{index + 1}"``).
        turns: the turns, in order.
        text: rendered page text (speaker names and session dates kept).
        tokens: token count of ``text``.
    """

    id: PageId
    index: int
    turns: tuple[Turn, ...]
    text: str
    tokens: int

    @property
    def session(self) -> int | None:
        """The session of the page's first turn."""
        return self.turns[0].session if self.turns else None

    @property
    def turn_ids(self) -> tuple[str, ...]:
        return tuple(t.id for t in self.turns)


def page_id(index: int) -> PageId:
    """The id of the page at 0-based ``index``."""
    return f"p{index + 1}"


# The one page-id parser: every module that reads a page id or a recall's page
# argument goes through parse_page_arg / page_index / page_ids_in.
# At most 9 digits: int() refuses strings over 4300 digits, and no conversation has a
# billion pages. Each optional part starts with a letter, so runs of spaces cannot be
# split between two ``\s*`` in many ways (no quadratic backtracking).
_PAGE_ARG = re.compile(r"\[?\s*(?:(?:page|pg)\s*)?(?:[#_\-]\s*)?(?:p\s*)?(\d{1,9})\s*(?:[:\]].*)?\Z",
                       re.IGNORECASE | re.DOTALL)
_PAGE_IN_TEXT = re.compile(r"(?i)\bp(\d{1,9})\b")


def parse_page_arg(value: object) -> int | None:
    """0-based page index from ``"p3"``, ``"P3"``, ``"3"``, ``3``, ``"page 3"``,
    ``"page_3"``, ``"[p3]"`` or ``"[p3:...]"``; else None."""
    if isinstance(value, str) and value[:1] == "p" and value[1:].isascii() and (
            value[1:].isdigit() and len(value) < 11):  # the usual "p3", without the regex
        n = int(value[1:])
        return n - 1 if n >= 1 else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value - 1 if value >= 1 else None
    if isinstance(value, float) and value.is_integer() and value >= 1:
        return int(value) - 1
    if isinstance(value, str):
        m = _PAGE_ARG.match(value.strip())
        if m and int(m.group(1)) >= 1:
            return int(m.group(1)) - 1
    return None


def page_index(pid: PageId) -> int:
    """0-based index of a page id such as ``"p3"``; a ``ValueError`` for anything else."""
    idx = parse_page_arg(pid)
    if idx is None:
        raise ValueError(f"not a page id: {pid!r}")
    return idx


def normal_page_id(value: object) -> PageId | None:
    """``"p3"`` for any form :func:`parse_page_arg` reads (``"P3"``, ``3``, ``"[p3:...]"``)."""
    idx = parse_page_arg(value)
    return None if idx is None else page_id(idx)


def page_ids_in(text: str) -> Iterator[PageId]:
    """The page ids written in free text (``"... p3 ..."``), in order, normalised."""
    for m in _PAGE_IN_TEXT.finditer(text):
        if int(m.group(1)) >= 1:
            yield page_id(int(m.group(1)) - 1)


@dataclass(frozen=True, slots=True)
class Bookmark:
    """What stands in the prompt for an evicted page."""

    page_id: PageId
    keywords: tuple[str, ...]
    text: str
    tokens: int
    format: str = "minimal"


@dataclass(slots=True)
class Book:
    """A pager's bookkeeping of one page's bookmark: the bookmark, the number of pages
    when it was made (its ``epoch``: a bookmark is stale once the conversation has 25%
    more pages) and its keywords lower-cased (the pager's count of keywords taken)."""

    bookmark: Bookmark
    epoch: int
    lowered: tuple[str, ...] = field(default_factory=tuple)
