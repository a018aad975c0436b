"""JSON encoding of the values a store persists (Turn, Bookmark, Event detail, state).

Every store keeps these values as JSON text, so all stores accept and return the
same things: a value that is not JSON-serialisable fails the same way everywhere,
and tuples inside ``meta`` or ``state`` come back as lists.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from copage.core.types import Bookmark, ToolCall, Turn
from copage.stores.protocol import ChangeSet, StoreError


class CorruptRow(StoreError):
    """A stored row could not be decoded (bad JSON or wrong shape)."""


def dumps(value: Any, what: str) -> str:
    """Compact JSON text of ``value``; ``what`` names it in the error message."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:
        raise StoreError(f"cannot store {what}: not JSON-serialisable ({e})") from None


def loads(text: str | bytes, where: str) -> Any:
    """Parse stored JSON; ``where`` names the conversation and row in the error."""
    try:
        return json.loads(text)
    except (TypeError, ValueError) as e:
        raise CorruptRow(f"corrupt JSON in {where}: {e}") from None


def turn_to_json(turn: Turn) -> str:
    """Encode a Turn (all fields)."""
    data: dict[str, Any] = {"id": turn.id, "role": turn.role, "text": turn.text}
    if turn.speaker is not None:
        data["speaker"] = turn.speaker
    if turn.timestamp is not None:
        data["timestamp"] = turn.timestamp
    if turn.session is not None:
        data["session"] = turn.session
    if turn.tool_calls:
        data["tool_calls"] = [[c.id, c.name, c.arguments] for c in turn.tool_calls]
    if turn.tool_call_id is not None:
        data["tool_call_id"] = turn.tool_call_id
    if turn.meta:
        data["meta"] = dict(turn.meta)
    return dumps(data, f"turn {turn.id!r}")


def turn_from_json(text: str | bytes, where: str) -> Turn:
    """Decode a Turn written by :func:`turn_to_json`."""
    data = _object(loads(text, where), where)
    try:
        calls = tuple(ToolCall(str(i), str(n), str(a)) for i, n, a in data.get("tool_calls", ()))
        session = data.get("session")
        return Turn(
            id=str(data["id"]),
            role=str(data["role"]),
            text=str(data["text"]),
            speaker=_opt_str(data.get("speaker")),
            timestamp=_opt_str(data.get("timestamp")),
            session=None if session is None else int(session),
            tool_calls=calls,
            tool_call_id=_opt_str(data.get("tool_call_id")),
            meta=_object(data.get("meta", {}), where),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptRow(f"malformed turn in {where}: {type(e).__name__}: {e}") from None


def bookmark_to_json(bm: Bookmark) -> str:
    """Encode a Bookmark."""
    data = {
        "page_id": bm.page_id,
        "keywords": list(bm.keywords),
        "text": bm.text,
        "tokens": bm.tokens,
        "format": bm.format,
    }
    return dumps(data, f"bookmark {bm.page_id!r}")


def bookmark_from_json(text: str | bytes, where: str) -> Bookmark:
    """Decode a Bookmark written by :func:`bookmark_to_json`."""
    data = _object(loads(text, where), where)
    try:
        return Bookmark(
            page_id=str(data["page_id"]),
            keywords=tuple(str(k) for k in data["keywords"]),
            text=str(data["text"]),
            tokens=int(data["tokens"]),
            format=str(data.get("format", "minimal")),
        )
    except (KeyError, TypeError, ValueError) as e:
        raise CorruptRow(f"malformed bookmark in {where}: {type(e).__name__}: {e}") from None


def object_from_json(text: str | bytes, where: str) -> dict[str, Any]:
    """Decode a JSON object (config, state, event detail)."""
    return _object(loads(text, where), where)


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise CorruptRow(f"malformed row in {where}: expected a JSON object")
    return dict(value)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class EncodedChange:
    """A :class:`ChangeSet` as the rows every store writes (JSON text, before any keys)."""

    turns: list[tuple[int, str]]  # (seq, turn JSON)
    bookmarks: list[tuple[int, str]]  # (page index, bookmark JSON)
    events: list[tuple[int, int, str, int | None, str]]  # (seq, turn seq, kind, page, detail)
    state: str | None
    page_state: list[tuple[int, str]]  # (page index, state JSON)


def encode_change(change: ChangeSet, name: str) -> EncodedChange:
    """Serialise a change once, with errors naming the conversation (``name``)."""
    return EncodedChange(
        turns=[(s, turn_to_json(t)) for s, t in change.turns],
        bookmarks=[(i, bookmark_to_json(b)) for i, b in change.bookmarks],
        events=[
            (e.seq, e.turn_seq, e.kind, e.page_index,
             dumps(dict(e.detail), f"event {e.seq} of {name}"))
            for e in change.events
        ],
        state=None if change.state is None else dumps(dict(change.state), f"state of {name}"),
        page_state=[(i, dumps(dict(d), f"state of page {i} of {name}"))
                    for i, d in change.page_state],
    )
