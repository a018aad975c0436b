"""The page inspector's data: a tenant's conversations, one conversation's page table and events.

Everything is read through the store with the caller's tenant, so another
tenant's conversation is simply not found, whatever id is asked for.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from copage.core.types import Turn, page_id
from copage.session.opening import read
from copage.stores.protocol import PageStore

PREVIEW = 160


#: Seconds after which a conversation with no turn is hidden from the list.
EMPTY_HIDDEN_AFTER = 300.0


def conversations(store: PageStore, tenant: str, now: float | None = None) -> list[dict[str, Any]]:
    """The tenant's conversations, most recently updated first.

    With ``now``, conversations with no turn created over :data:`EMPTY_HIDDEN_AFTER`
    seconds before are left out: the proxy creates a conversation's row when its
    first turn starts, so a worker killed during that turn leaves an empty one.
    """
    infos = [c for c in store.list_conversations(tenant=tenant)
             if not (now is not None and c.turns == 0
                     and now - c.created_at > EMPTY_HIDDEN_AFTER)]
    infos.sort(key=lambda c: -c.updated_at)
    return [{"id": c.id, "turns": c.turns, "pages": c.pages, "created_at": c.created_at,
             "updated_at": c.updated_at,
             "first_message": _first_message(store, tenant, c.id) if i < TITLED else None}
            for i, c in enumerate(infos)]


#: The most recent conversations whose first message the list shows (each is a load).
TITLED = 50
TITLE = 80


def _first_message(store: PageStore, tenant: str, cid: str) -> str | None:
    """The first user message's start, what a person recognises a conversation by (the
    ids are random); None if it has none or is gone."""
    try:
        turns = store.load(cid, tenant=tenant).turns
    except Exception:  # noqa: BLE001 - deleted meanwhile or unreadable: no title
        return None
    text = next((t.text for t in turns if t.role == "user" and t.text.strip()), None)
    if text is None:
        return None
    text = " ".join(text.split())
    return text if len(text) <= TITLE else text[: TITLE - 1] + "…"


def conversation(store: PageStore, tenant: str, conversation_id: str) -> dict[str, Any]:
    """Page table (turns, bookmark, resident/evicted, accesses, last access, faults) and events.

    Raises ``ConversationNotFound`` when the tenant has no such conversation.
    """
    events = store.events(conversation_id, tenant=tenant)
    # Read-only: a conversation deleted meanwhile is not found, never re-created.
    mem = read(store, conversation_id, tenant=tenant)
    resident = set(mem.resident)
    accesses: dict[int, int] = defaultdict(int)
    faults: dict[int, int] = defaultdict(int)
    last: dict[int, int] = {}
    for e in events:
        if e.page_index is None or e.kind not in ("admit", "hit", "fault"):
            continue
        accesses[e.page_index] += 1
        last[e.page_index] = e.turn_seq + 1
        if e.kind == "fault":
            faults[e.page_index] += 1
    books = mem.bookmarks()
    pages = []
    for p in mem.pages:
        bm = books.get(p.id)
        pages.append({
            "id": p.id, "first_turn": p.turns[0].id if p.turns else None,
            "last_turn": p.turns[-1].id if p.turns else None, "n_turns": len(p.turns),
            "tokens": p.tokens, "turns": [_turn(t) for t in p.turns],
            "bookmark": bm.text if bm else None, "keywords": list(bm.keywords) if bm else [],
            "state": "resident" if p.id in resident else "evicted",
            "accesses": accesses[p.index], "last_access_turn": last.get(p.index),
            "faults": faults[p.index],
        })
    open_turns = [_turn(t) for t in mem.open_turns]
    timeline = [{"seq": e.seq, "turn": e.turn_seq + 1, "kind": e.kind,
                 "page": page_id(e.page_index) if e.page_index is not None else None,
                 "detail": dict(e.detail)} for e in events]
    recalls: dict[int, list[dict[str, Any]]] = defaultdict(list)
    counts = {"faults": sum(faults.values()), "recalls": 0, "fills": 0, "fill_pages": 0}
    for e, item in zip(events, timeline, strict=True):
        if e.kind == "recall":
            recalls[e.turn_seq + 1].append(item)
            counts["recalls"] += 1
        elif e.kind == "speculative" and e.detail.get("paged_in"):
            # the default mode's fill: pages shown before the question, like a recall
            recalls[e.turn_seq + 1].append(item)
            counts["fills"] += 1
            counts["fill_pages"] += len(e.detail["paged_in"])
    stats = mem.stats().to_dict()  # prompt_cache: the stored meter's count
    return {
        # counts: from the same events as the page table and the timeline, so the
        # summary never says "0 faults" beside a page with faults
        "counts": counts,
        "id": conversation_id, "config": mem.config.to_dict(), "stats": stats,
        "pages": pages, "open_turns": open_turns, "events": timeline,
        "recalls_by_turn": [{"turn": t, "recalls": r} for t, r in sorted(recalls.items())],
    }


def _turn(turn: Turn) -> dict[str, Any]:
    """A turn's preview, with the tool calls it makes or the call id it answers."""
    text = turn.text
    out: dict[str, Any] = {
        "role": turn.role, "text": text if len(text) <= PREVIEW else text[: PREVIEW - 1] + "…"}
    if turn.tool_calls:
        out["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": c.arguments}
                             for c in turn.tool_calls]
    if turn.tool_call_id is not None:
        out["tool_call_id"] = turn.tool_call_id
    if turn.meta.get("trace_id"):  # the turn's OpenTelemetry trace (docs/otel.md)
        out["trace_id"] = str(turn.meta["trace_id"])
    return out
