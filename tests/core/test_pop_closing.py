"""PagedMemory.pop_turn of a turn that closed its page: the commit that added it is
taken back (issue 18: ``CopageSession.pop_item`` rebuilt the whole conversation). The
result, in memory, reloaded and continued, is the conversation that never had the turn."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from copage import PagedMemory
from copage.stores import open_store

SETTINGS: list[dict[str, Any]] = [
    {"boundary": "fixed_4", "policy": "lru", "resident_pages": 2, "keywords": "heuristic"},
    {"boundary": "fixed_4", "policy": "lru", "resident_pages": 2, "keywords": "discriminative"},
    {"boundary": "fixed_3", "policy": "query", "resident_pages": 2, "keywords": "tfidf"},
    {"boundary": "fixed_5", "policy": "lrfu", "resident_tokens": 120, "keywords": "heuristic"},
    {"boundary": "fixed_3", "policy": "lru", "resident_pages": 1, "keywords": "heuristic",
     "index_tokens": 64, "group_pages": 2},  # a bounded index: older pages in groups
]
#: extractors whose page closes may re-extract older bookmarks (then no take-back)
REFRESHING = ("discriminative", "tfidf")
IDS = ["lru-heuristic", "lru-discriminative", "query-tfidf", "lrfu-tokens", "groups"]
WORDS = ["locker", "Lisbon", "dentist", "Marta", "tram", "insurance", "Biscuit", "sencha",
         "espresso", "4471", "Okafor"]


def _say(rng: random.Random, i: int) -> tuple[str, str]:
    return ("user" if i % 2 == 0 else "assistant",
            f"turn {i}: " + " ".join(rng.choice(WORDS) for _ in range(6)))


def _view(mem: PagedMemory) -> Any:
    ctx = mem.context()
    stats = mem.stats().to_dict()
    del stats["prompt_cache"]  # the requests this object built, not the conversation
    del stats["savings"]  # read from prompt_cache
    events = [(e.seq, e.turn_seq, e.kind, e.page_index, dict(e.detail))
              for e in mem.store.events(mem.conversation_id, tenant=mem.tenant)]
    return (ctx.messages, ctx.tools, mem.resident, mem.evicted, [t.id for t in mem.turns],
            [(p.id, p.text, p.tokens) for p in mem.pages],
            {k: v.text for k, v in mem.bookmarks().items()}, stats, events,
            [(h.bookmark.page_id, round(h.score, 6)) for h in mem.search("Lisbon dentist 4471")])


def _reopened(mem: PagedMemory) -> PagedMemory:
    return PagedMemory(store=mem.store, conversation_id=mem.conversation_id, create=False)


@pytest.mark.parametrize("url", ["memory://", "sqlite"])
@pytest.mark.parametrize("settings", SETTINGS, ids=IDS)
def test_pop_of_a_page_closing_turn_is_the_conversation_without_it(
        url: str, settings: dict[str, Any], tmp_path: Path) -> None:
    store = open_store(f"sqlite://{tmp_path / 'p.db'}" if url == "sqlite" else url)
    rng = random.Random(11)
    mem = PagedMemory(store=store, conversation_id="c", **settings)
    ref = PagedMemory(store=store, conversation_id="ref", **settings)  # never had them
    reader = None  # another process that had the page-closing turn cached
    pops = closes = 0
    for i in range(70):
        role, text = _say(rng, i)
        pages = len(mem.pages)
        mem.add(role, text, id=f"t{i}")
        closes += len(mem.pages) > pages
        if reader is None and len(mem.pages) > 2:
            reader = _reopened(mem)
        elif reader is not None:
            reader.refresh()
        if len(mem.pages) > pages and closes % 2:  # this turn closed a page: take it back
            version, before = mem.version, _view(mem)
            popped = mem.pop_turn()
            if popped is None:  # its commit refreshed older bookmarks: not taken back
                assert settings["keywords"] in REFRESHING
                assert mem.version == version and _view(mem) == before
            else:
                assert popped.id == f"t{i}" and mem.version == version + 1  # one commit
                pops += 1
                assert _view(mem) == _view(ref)
                assert _view(_reopened(mem)) == _view(_reopened(ref))
                if reader is not None:
                    reader.refresh()  # catches up with the take-back
                    assert _view(reader) == _view(ref)
                continue
        ref.add(role, text, id=f"t{i}")
        if i % 5 == 4 and ref.evicted:  # a recall between turns, in both
            page = rng.choice(ref.evicted)
            assert mem.recall(page) == ref.recall(page)
    assert pops >= (1 if settings["keywords"] in REFRESHING else 4)
    assert "group_pages" not in settings or mem.pager.groups
    for m in (mem, ref):  # it goes on as if the turns had never been there
        for i in range(9):
            m.add(*_say(random.Random(i), i), id=f"again{i}")
    assert _view(mem) == _view(ref)
    assert _view(_reopened(mem)) == _view(_reopened(ref))


def test_a_batch_is_taken_back_and_its_other_turns_added_again(tmp_path: Path) -> None:
    store = open_store(f"sqlite://{tmp_path / 'b.db'}")
    mem = PagedMemory(store=store, conversation_id="c", **SETTINGS[0])
    ref = PagedMemory(store=store, conversation_id="ref", **SETTINGS[0])
    rng = random.Random(3)
    says = [_say(rng, i) for i in range(13)]
    for m in (mem, ref):
        for i, (role, text) in enumerate(says[:6]):
            m.add(role, text, id=f"t{i}")
    with mem.transaction():  # one commit: closes a page in its middle and at its end
        for i, (role, text) in enumerate(says[6:], start=6):
            mem.add(role, text, id=f"t{i}")
    assert len(mem.pages) == 3  # pages of 4: turn 11 closed p3
    with ref.transaction():
        for i, (role, text) in enumerate(says[6:11], start=6):
            ref.add(role, text, id=f"t{i}")
    assert mem.pop_turn() is not None and mem.pop_turn() is not None  # t12, then t11
    assert _view(mem) == _view(ref)
    assert _view(_reopened(mem)) == _view(_reopened(ref))


def test_only_the_objects_own_latest_commit_of_turns_is_taken_back() -> None:
    mem = PagedMemory(**SETTINGS[0])
    for i in range(7):
        mem.add(*_say(random.Random(i), i))
    mem.recall("p1")  # the latest commit is a recall: nothing to take back
    mem.add("assistant", "closes p2")
    assert len(mem.pages) == 2
    reopened = _reopened(mem)
    assert reopened.pop_turn() is None  # opened after the commit: no record of it
    mem.recall("p1")
    before, version = _view(mem), mem.version
    assert mem.pop_turn() is None  # a recall came after the closing commit
    assert _view(mem) == before and mem.version == version
