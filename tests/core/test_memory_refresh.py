"""PagedMemory.refresh: catching up with another writer gives exactly the state a full
load gives, and reads only what was added (the store's load_since)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from copage import PagedMemory
from copage.stores import open_store

SETTINGS: list[dict[str, Any]] = [
    {"boundary": "fixed_4", "policy": "lru", "resident_pages": 2, "keywords": "discriminative"},
    {"boundary": "fixed_3", "policy": "query", "resident_pages": 2, "keywords": "tfidf"},
    # groups form and merge, bookmarks go stale and are refreshed, counts matter (LFU)
    {"boundary": "fixed_2", "policy": "lfu", "resident_pages": 2, "keywords": "contrast",
     "index_tokens": 64},
]
WORDS = ["locker", "Lisbon", "dentist", "Marta", "tram", "insurance", "Biscuit", "sencha",
         "espresso", "4471", "Okafor"]


def _view(mem: PagedMemory) -> Any:
    ctx = mem.context()
    stats = mem.stats().to_dict()
    # prompt_cache describes the requests this object built (its own context() calls),
    # not the stored conversation: a fresh object has built one.
    del stats["prompt_cache"]
    del stats["savings"]  # read from prompt_cache
    return (ctx.messages, ctx.tools, mem.resident, mem.evicted,
            {k: v.text for k, v in mem.bookmarks().items()}, stats,
            [(h.bookmark.page_id, round(h.score, 6)) for h in mem.search("Lisbon dentist 4471")],
            mem.version, [t.id for t in mem.visible_turns()],
            # what decides the next evictions: every page's access history, the epochs
            mem.pager.cache.snapshot(), [mem.pager.page_state(p.index) for p in mem.pager.pages])


@pytest.mark.parametrize("url", ["memory://", "sqlite"])
@pytest.mark.parametrize("settings", SETTINGS,
                         ids=["lru-discriminative", "query-tfidf", "lfu-contrast-groups"])
def test_refresh_equals_a_full_load(url: str, settings: dict[str, Any], tmp_path: Path) -> None:
    store = open_store(f"sqlite://{tmp_path / 'r.db'}" if url == "sqlite" else url)
    rng = random.Random(7)
    writer = PagedMemory(store=store, conversation_id="c", **settings)
    writer.add("user", "hello")  # (an empty reader is simply loaded)
    reader = PagedMemory(store=store, conversation_id="c", create=False)
    full_loads: list[str] = []
    for mem in (reader, writer):  # count full loads: refresh must not need one here
        load = mem._load
        mem._load = lambda expect=None, load=load: (full_loads.append("x"), load(expect))[1]  # type: ignore[method-assign]
    for step in range(40):
        for _ in range(rng.randint(1, 5)):  # the other writer adds turns, recalls, ...
            role = "user" if len(writer.turns) % 2 == 0 else "assistant"
            writer.add(role, " ".join(rng.choice(WORDS) for _ in range(6)) + f" #{step}")
        if writer.evicted and rng.random() < 0.4:
            writer.recall(rng.choice(writer.evicted))
        reader.refresh()
        fresh = PagedMemory(store=store, conversation_id="c", create=False)
        assert _view(reader) == _view(fresh), step
        assert reader.has_turn(writer.turns[-1].id)
        if step % 5 == 4:  # the reader writes too, then the writer catches up
            reader.add("user", f"from the reader {step}")
            writer.refresh()
            assert _view(writer) == _view(reader)
    assert full_loads == []


def test_refresh_reads_only_what_was_added(tmp_path: Path) -> None:
    store = open_store(f"sqlite://{tmp_path / 'r.db'}")
    writer = PagedMemory(store=store, conversation_id="c", boundary="fixed_2")
    for i in range(20):
        writer.add("user" if i % 2 == 0 else "assistant", f"turn {i}")
    reader = PagedMemory(store=store, conversation_id="c", create=False)
    writer.add("user", "turn 20")
    asked: list[tuple[int, int]] = []
    real = store.load_since  # type: ignore[attr-defined]

    got: list[Any] = []

    def spy(cid: str, **kw: Any) -> Any:
        asked.append((kw["turns_from"], kw["pages_from"], kw["since_version"]))
        got.append(real(cid, **kw))
        return got[-1]

    store.load_since = spy  # type: ignore[attr-defined]
    store.load = None  # type: ignore[assignment,method-assign]  # a full load would fail
    version = reader.version
    reader.refresh()
    assert asked == [(19, 10, version)] and len(reader.turns) == 21
    # Only the rows the writer's last commit wrote: no bookmark, no page state changed.
    assert (got[0].bookmarks, got[0].page_state) == ({}, {})


def test_a_conversation_recreated_under_the_same_id_is_loaded_in_full() -> None:
    store = open_store("memory://")
    a = PagedMemory(store=store, conversation_id="c", boundary="fixed_2")
    for i in range(6):
        a.add("user" if i % 2 == 0 else "assistant", f"old {i}")
    reader = PagedMemory(store=store, conversation_id="c", create=False)
    store.delete_conversation("c")
    b = PagedMemory(store=store, conversation_id="c", boundary="fixed_2")
    for i in range(8):
        b.add("user" if i % 2 == 0 else "assistant", f"new {i}")
    reader.refresh()
    assert [t.text for t in reader.turns] == [f"new {i}" for i in range(8)]
