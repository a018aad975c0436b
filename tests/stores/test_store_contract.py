"""The PageStore contract, run against every store (memory, sqlite, postgres)."""

from __future__ import annotations

import multiprocessing
import threading
import time

import pytest
from store_helpers import StoreFactory
from store_workers import increment

from copage.core.types import Bookmark, ToolCall, Turn
from copage.stores import (
    ChangeSet,
    ConversationExists,
    ConversationNotFound,
    Event,
    InvalidChange,
    PageRecord,
    PageStore,
    StoreError,
    VersionConflict,
)

RICH_TURNS = [
    Turn(
        id="D1:1",
        role="user",
        text="Hi! I'm allergic to peanuts 🥜 — señor 日本語 שלום",
        speaker="Caroline",
        timestamp="1:56 pm on 8 May, 2023",
        session=1,
        meta={"blip_caption": "a photo", "nested": {"a": [1, 2.5, None, True]}, "ü": "✓"},
    ),
    Turn(
        id="t2",
        role="assistant",
        text="",
        tool_calls=(
            ToolCall("call_1", "recall", '{"page": "p1"}'),
            ToolCall("call_2", "recall", '{"page": "p2", "q": "\\"x\\""}'),
        ),
    ),
    Turn(id="t3", role="tool", text="page p1: ...\nline two\ttab", tool_call_id="call_1"),
    Turn(id="t4", role="system", text="  leading and trailing spaces  ", session=2),
]


def bm(index: int, *kw: str) -> Bookmark:
    pid = f"p{index + 1}"
    return Bookmark(pid, kw, f"[{pid}:{', '.join(kw)}]", 3 + len(kw), "minimal")


def first_change() -> ChangeSet:
    return ChangeSet(
        turns=list(enumerate(RICH_TURNS)),
        pages=[PageRecord(0, 0, 1, 57), PageRecord(1, 2, 3, 31)],
        bookmarks=[(0, bm(0, "peanut allergy", "Thai")), (1, bm(1, "recall"))],
        events=[Event(1, 0, "admit", 0), Event(2, 3, "recall", 1, {"ok": True, "why": "ünï"})],
        state={"resident": ["p2"], "clock": 2, "policy": {"lru": [1, 0]}},
    )


def test_create_load_exists(store: PageStore) -> None:
    assert not store.exists("c1")
    store.create_conversation("c1", {"boundary": "fixed_20", "k": 5}, now=10.0)
    assert store.exists("c1")
    conv = store.load("c1")
    assert (conv.id, conv.tenant, conv.version) == ("c1", "default", 0)
    assert conv.config == {"boundary": "fixed_20", "k": 5}
    assert (conv.turns, conv.pages, conv.bookmarks, conv.state) == ([], [], {}, {})
    with pytest.raises(ConversationExists):
        store.create_conversation("c1", {})
    with pytest.raises(ConversationNotFound):
        store.load("nope")
    with pytest.raises(KeyError):  # ConversationNotFound is also a KeyError
        store.load("nope")


def test_commit_round_trips_everything(store: PageStore) -> None:
    store.create_conversation("c", {})
    assert store.commit("c", first_change(), now=5.0) == 1
    conv = store.load("c")
    assert conv.turns == RICH_TURNS
    assert conv.pages == [PageRecord(0, 0, 1, 57), PageRecord(1, 2, 3, 31)]
    assert conv.bookmarks == {0: bm(0, "peanut allergy", "Thai"), 1: bm(1, "recall")}
    assert conv.state == {"resident": ["p2"], "clock": 2, "policy": {"lru": [1, 0]}}
    assert conv.version == 1
    assert store.events("c") == [
        Event(1, 0, "admit", 0),
        Event(2, 3, "recall", 1, {"ok": True, "why": "ünï"}),
    ]


def test_load_since_reads_the_tail(store: PageStore) -> None:
    """``load_since``: the turns from a seq and the pages from an index, the rest as load."""
    store.create_conversation("c", {"k": 1})
    store.commit("c", first_change())
    full = store.load("c")
    tail = store.load_since("c", turns_from=2, pages_from=1)  # type: ignore[attr-defined]
    assert tail.turns == full.turns[2:] and tail.pages == full.pages[1:]
    assert (tail.bookmarks, tail.state, tail.version, tail.config) == (
        full.bookmarks, full.state, full.version, full.config)
    whole = store.load_since("c")  # type: ignore[attr-defined]
    assert (whole.turns, whole.pages) == (full.turns, full.pages)
    past = store.load_since("c", turns_from=99, pages_from=99)  # type: ignore[attr-defined]
    assert (past.turns, past.pages) == ([], [])
    with pytest.raises(ConversationNotFound):
        store.load_since("nope", turns_from=0)  # type: ignore[attr-defined]


def test_truncate_removes_open_page_turns_only(store: PageStore) -> None:
    store.create_conversation("c", {})
    store.commit("c", first_change())  # 4 turns, all on pages
    store.commit("c", ChangeSet(turns=[(4, Turn("t5", "user", "a")), (5, Turn("t6", "user", "b"))]))
    with pytest.raises(InvalidChange, match="cannot remove"):
        store.commit("c", ChangeSet(truncate=3))  # on page 1
    assert store.commit("c", ChangeSet(truncate=5, turns=[(5, Turn("t7", "user", "c"))])) == 3
    assert [t.id for t in store.load("c").turns][4:] == ["t5", "t7"]
    store.commit("c", ChangeSet(truncate=4))
    conv = store.load("c")
    assert len(conv.turns) == 4 and conv.version == 4
    assert [c.turns for c in store.list_conversations() if c.id == "c"] == [4]


def test_drop_pages_takes_back_a_page_close(store: PageStore) -> None:
    """``drop_pages`` / ``drop_events``: the pages (with their bookmarks) and events from
    an index / seq on go first, so the turns they held may be truncated (issue 18)."""
    store.create_conversation("c", {})
    store.commit("c", first_change())  # turns 0-3, pages 0-1, events 1-2
    with pytest.raises(InvalidChange, match="cannot remove"):
        store.commit("c", ChangeSet(truncate=3, drop_pages=2))  # page 1 stays
    with pytest.raises(InvalidChange, match="pages from index 3"):
        store.commit("c", ChangeSet(drop_pages=3))
    assert store.load("c").version == 1  # nothing written
    again = [Event(2, 2, "admit", 1, {"again": True})]
    assert store.commit("c", ChangeSet(truncate=2, drop_pages=1, drop_events=2, events=again,
                                       turns=[(2, Turn("t9", "user", "x"))],
                                       state={"taken": "back"})) == 2
    conv = store.load("c")
    assert [t.id for t in conv.turns] == ["D1:1", "t2", "t9"]
    assert conv.pages == [PageRecord(0, 0, 1, 57)] and list(conv.bookmarks) == [0]
    assert conv.state == {"taken": "back"}
    assert store.events("c") == [Event(1, 0, "admit", 0), *again]
    assert [(c.turns, c.pages) for c in store.list_conversations() if c.id == "c"] == [(3, 1)]
    # the next page continues from the kept ones
    store.commit("c", ChangeSet(pages=[PageRecord(1, 2, 2, 5)], bookmarks=[(1, bm(1, "new"))]))
    conv = store.load("c")
    assert conv.pages[1] == PageRecord(1, 2, 2, 5) and conv.bookmarks[1] == bm(1, "new")


def test_versions_upserts_and_state_kept(store: PageStore) -> None:
    store.create_conversation("c", {})
    store.commit("c", first_change())
    change = ChangeSet(turns=[(4, Turn("t5", "user", "more"))], bookmarks=[(0, bm(0, "new"))])
    assert store.commit("c", change, expected_version=1) == 2
    assert store.commit("c", ChangeSet(), expected_version=2) == 3  # empty change still bumps
    conv = store.load("c")
    assert conv.version == 3
    assert conv.bookmarks[0] == bm(0, "new") and len(conv.bookmarks) == 2
    assert conv.state["clock"] == 2  # state=None leaves the snapshot alone
    assert [t.id for t in conv.turns] == ["D1:1", "t2", "t3", "t4", "t5"]


def test_version_conflict_writes_nothing(store: PageStore) -> None:
    store.create_conversation("c", {})
    store.commit("c", first_change())
    before = store.load("c")
    stale = ChangeSet(
        turns=[(4, Turn("x", "user", "x"))], state={"x": 1}, events=[Event(9, 4, "hit", 0)]
    )
    with pytest.raises(VersionConflict, match="expected version 0, stored 1"):
        store.commit("c", stale, expected_version=0)
    assert store.load("c") == before
    assert len(store.events("c")) == 2


def test_invalid_changes_are_atomic(store: PageStore) -> None:
    store.create_conversation("c", {})
    store.commit("c", first_change())
    before = store.load("c")
    with pytest.raises(InvalidChange, match="turn seq 7"):
        store.commit("c", ChangeSet(turns=[(7, Turn("x", "user", "x"))]))
    with pytest.raises(InvalidChange, match="page index 5"):
        store.commit("c", ChangeSet(pages=[PageRecord(5, 0, 0, 1)]))
    dup_event = ChangeSet(
        turns=[(4, Turn("x", "user", "x"))], state={"x": 1}, events=[Event(2, 4, "hit", 0)]
    )
    with pytest.raises(InvalidChange, match="event seq"):
        store.commit("c", dup_event)
    with pytest.raises(StoreError, match="JSON"):
        store.commit("c", ChangeSet(turns=[(4, Turn("x", "user", "x"))], state={"s": {1, 2}}))
    assert store.load("c") == before
    with pytest.raises(ConversationNotFound):
        store.commit("missing", ChangeSet())


def test_callers_cannot_mutate_stored_state(store: PageStore) -> None:
    meta = {"tags": ["a"]}
    state = {"resident": ["p1"]}
    store.create_conversation("c", {"k": [1]})
    store.commit("c", ChangeSet(turns=[(0, Turn("t", "user", "x", meta=meta))], state=state))
    meta["tags"].append("b")
    state["resident"].append("p9")
    conv = store.load("c")
    conv.state["resident"].append("p7")
    conv.config["k"].append(2)
    again = store.load("c")
    assert again.turns[0].meta == {"tags": ["a"]}
    assert again.state == {"resident": ["p1"]} and again.config == {"k": [1]}


def test_tenant_isolation(store: PageStore) -> None:
    store.create_conversation("same", {"who": "A"}, tenant="A")
    store.commit("same", first_change(), tenant="A")
    store.create_conversation("same", {"who": "B"}, tenant="B")
    assert store.load("same", tenant="B").turns == []
    assert store.load("same", tenant="A").config == {"who": "A"}
    store.create_conversation("only-a", {}, tenant="A")
    for call in (
        lambda: store.load("only-a", tenant="B"),
        lambda: store.events("only-a", tenant="B"),
        lambda: store.delete_conversation("only-a", tenant="B"),
        lambda: store.commit("only-a", ChangeSet(), tenant="B"),
    ):
        with pytest.raises(ConversationNotFound):
            call()
    assert not store.exists("only-a", tenant="B") and not store.exists("only-a")
    assert [c.id for c in store.list_conversations(tenant="B")] == ["same"]
    assert store.events("same", tenant="B") == []
    assert store.exists("only-a", tenant="A")


def test_list_conversations(store: PageStore) -> None:
    assert store.list_conversations() == []
    store.create_conversation("b", {}, now=1.0)
    store.create_conversation("a", {}, now=2.0)
    store.create_conversation("x", {}, tenant="other", now=0.5)
    store.commit("b", first_change(), now=3.0)
    infos = store.list_conversations()
    assert [i.id for i in infos] == ["b", "a"]
    b = infos[0]
    assert (b.tenant, b.created_at, b.updated_at, b.turns, b.pages, b.version) == (
        "default",
        1.0,
        3.0,
        4,
        2,
        1,
    )
    assert [i.id for i in store.list_conversations(tenant="other")] == ["x"]


def test_delete(store: PageStore) -> None:
    store.create_conversation("c", {})
    store.commit("c", first_change())
    store.delete_conversation("c")
    assert not store.exists("c")
    with pytest.raises(ConversationNotFound):
        store.delete_conversation("c")
    with pytest.raises(ConversationNotFound):
        store.events("c")
    store.create_conversation("c", {"fresh": True})
    conv = store.load("c")
    assert (conv.turns, conv.version, store.events("c")) == ([], 0, [])


def test_events_since_seq(store: PageStore) -> None:
    store.create_conversation("c", {})
    evs = [Event(s, s // 2, "hit" if s % 2 else "fault", s % 3, {"s": s}) for s in range(1, 8)]
    store.commit("c", ChangeSet(events=evs[:4]))
    store.commit("c", ChangeSet(events=evs[4:]))
    assert store.events("c") == evs
    assert store.events("c", since_seq=5) == evs[4:]
    assert store.events("c", since_seq=100) == []


def test_reopen_continues_exactly(stores: StoreFactory) -> None:
    first = stores.open()
    first.create_conversation("c", {"k": 5}, tenant="t")
    first.commit("c", first_change(), tenant="t")
    before = first.load("c", tenant="t")
    if stores.persistent:
        first.close()
    second = stores.open()
    assert second.load("c", tenant="t") == before
    more = ChangeSet(
        turns=[(4, Turn("t5", "user", "after reopen"))],
        state={"n": 5},
        events=[Event(3, 4, "hit", 1)],
    )
    assert second.commit("c", more, tenant="t", expected_version=1) == 2
    assert second.load("c", tenant="t").turns[-1].text == "after reopen"
    assert [e.seq for e in second.events("c", tenant="t")] == [1, 2, 3]


def test_lock_is_exclusive(store: PageStore) -> None:
    store.create_conversation("c", {})
    order: list[str] = []
    held = threading.Event()

    def holder() -> None:
        with store.lock("c"):
            held.set()
            time.sleep(0.2)
            order.append("holder released")

    def waiter() -> None:
        held.wait()
        with store.lock("c"):
            order.append("waiter acquired")
        with store.lock("other"):  # a different conversation is not blocked
            pass

    threads = [threading.Thread(target=holder), threading.Thread(target=waiter)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert order == ["holder released", "waiter acquired"]


def test_lock_serialises_threads(stores: StoreFactory) -> None:
    store = stores.open()
    store.create_conversation("c", {})

    def work() -> None:
        for _ in range(50):
            with store.lock("c"):
                counter = store.load("c").state.get("counter", 0)
                time.sleep(0)  # invite a thread switch inside the critical section
                store.commit("c", ChangeSet(state={"counter": counter + 1}))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    conv = store.load("c")
    assert (conv.state["counter"], conv.version) == (100, 100)


def test_lock_serialises_processes(stores: StoreFactory) -> None:
    if not stores.persistent:
        pytest.skip("the memory store lives in one process")
    store = stores.open()
    store.create_conversation("default-conv", {})
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=increment, args=(stores.url, "default-conv", 50)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    conv = store.load("default-conv")
    assert (conv.state["counter"], conv.version) == (100, 100)


def test_is_a_page_store(store: PageStore) -> None:
    assert isinstance(store, PageStore)
