"""Shared helpers of the session tests: a conversation that evicts, message checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from copage.memory import PagedMemory

TOPICS = [
    "I have a severe peanut allergy, so no Thai satay for me.",
    "My laptop budget is 1200 dollars, not a cent more.",
    "The dentist appointment is on Tuesday at 9 in Zurich.",
    "My sister Maria turns forty on the 3rd of June.",
    "The side project is written in Rust only, no Python.",
    "We plan a hiking trip in the Alps near Grindelwald.",
]


def fill(mem: PagedMemory, topics: Sequence[str] = TOPICS, per_page: int = 5) -> None:
    """Add ``per_page`` turns per topic (user and assistant alternating)."""
    n = 0
    for topic in topics:
        for j in range(per_page):
            role = "user" if n % 2 == 0 else "assistant"
            text = topic if j == 0 else f"{'Noted' if role == 'assistant' else 'Also'} ({j}): {topic}"
            mem.add(role, text)
            n += 1


def new_memory(store: str = "memory://", **settings: Any) -> PagedMemory:
    """fixed_5, k=2, filled with six topics: p1..p4 evicted, p5 and p6 resident."""
    opts: dict[str, Any] = {"boundary": "fixed_5", "resident_pages": 2}
    opts.update(settings)
    mem = PagedMemory(store=store, conversation_id="conv", **opts)
    fill(mem)
    return mem


def check_pairs(messages: Sequence[Mapping[str, Any]]) -> None:
    """Every assistant tool call is answered by exactly one tool message, in order."""
    i = 0
    while i < len(messages):
        m = messages[i]
        assert m["role"] != "tool", f"orphaned tool result at {i}: {m}"
        calls = m.get("tool_calls") or []
        i += 1
        for call in calls:
            assert i < len(messages), f"tool call {call['id']} has no result"
            reply = messages[i]
            assert reply["role"] == "tool" and reply["tool_call_id"] == call["id"], (
                f"message {i} should answer {call['id']}: {reply}"
            )
            i += 1
        if calls:
            assert m["role"] == "assistant"
            assert m["content"] in ("", None)
    ids = [c["id"] for m in messages for c in (m.get("tool_calls") or [])]
    assert len(ids) == len(set(ids)), f"duplicate tool call ids {ids}"


def state_of(mem: PagedMemory) -> dict[str, Any]:
    """Everything a reopened conversation should show."""
    return {
        "turns": [(t.id, t.role, t.text) for t in mem.turns],
        "pages": [p.id for p in mem.pages],
        "resident": mem.resident,
        "evicted": mem.evicted,
        "bookmarks": {k: v.text for k, v in mem.bookmarks().items()},
        "stats": mem.stats().to_dict(),
    }
