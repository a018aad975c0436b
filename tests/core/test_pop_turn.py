"""PagedMemory.pop_turn: the latest open-page turn goes in one commit; the state is the
one a conversation without that turn has, in memory, after a reload, and for a reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from copage import PagedMemory
from copage.stores import ChangeSet, open_store
from copage.stores.change_checks import InvalidChange

SETTINGS: dict[str, Any] = {"boundary": "fixed_4", "policy": "lru", "resident_pages": 1,
                            "keywords": "tfidf"}


def _say(i: int) -> tuple[str, str]:
    return ("user" if i % 2 == 0 else "assistant", f"turn {i} about city{i % 5} and {i * 7}")


def _view(mem: PagedMemory) -> Any:
    ctx = mem.context()
    return (ctx.messages, ctx.tools, mem.resident, mem.evicted, [t.text for t in mem.turns],
            {k: v.text for k, v in mem.bookmarks().items()}, mem.stats().turns)


@pytest.mark.parametrize("url", ["memory://", "sqlite"])
def test_pop_is_the_conversation_without_the_turn(url: str, tmp_path: Path) -> None:
    store = open_store(f"sqlite://{tmp_path / 'p.db'}" if url == "sqlite" else url)
    ref_store = open_store("memory://")
    mem = PagedMemory(store=store, conversation_id="c", **SETTINGS)
    reader = PagedMemory(store=store, conversation_id="c", create=False)
    for i in range(10):
        mem.add(*_say(i))
    assert mem.pager.open_turns  # turns 8 and 9 are open
    version = mem.version
    popped = mem.pop_turn()
    assert popped is not None and popped.text == _say(9)[1] and mem.version == version + 1
    ref = PagedMemory(store=ref_store, conversation_id="r", **SETTINGS)
    for i in range(9):
        ref.add(*_say(i))
    assert _view(mem) == _view(ref)
    assert _view(PagedMemory(store=store, conversation_id="c", create=False)) == _view(ref)
    reader.refresh()
    assert _view(reader) == _view(ref)
    assert not mem.has_turn(popped.id)
    # the conversation goes on as if the turn had never been there
    for m in (mem, ref):
        m.add("assistant", "again")
        m.add("user", "and more")
    assert _view(mem) == _view(ref)
    assert _view(PagedMemory(store=store, conversation_id="c", create=False)) == _view(ref)


def test_a_turn_on_a_closed_page_is_not_popped_by_another_object() -> None:
    mem = PagedMemory(**SETTINGS)
    assert mem.pop_turn() is None
    for i in range(8):
        mem.add(*_say(i))
    # reopened: this object did not make the commit that closed the page (when it did,
    # the commit is taken back: tests/core/test_pop_closing.py)
    mem = PagedMemory(store=mem.store, conversation_id=mem.conversation_id, create=False)
    assert not mem.pager.open_turns  # turn 8 closed page p2
    before, version = _view(mem), mem.version
    assert mem.pop_turn() is None
    assert _view(mem) == before and mem.version == version


def test_pop_inside_a_transaction_of_the_same_turn_stores_nothing_of_it() -> None:
    mem = PagedMemory(**SETTINGS)
    mem.add(*_say(0))
    with mem.transaction():
        mem.add(*_say(1))
        assert mem.pop_turn() is not None
        assert mem.pop_turn() is not None  # and the stored one before it
        mem.add("user", "instead")
    again = PagedMemory(store=mem.store, conversation_id=mem.conversation_id, create=False)
    assert [t.text for t in again.turns] == ["instead"]


def test_stores_refuse_to_truncate_paged_turns(tmp_path: Path) -> None:
    for store in (open_store("memory://"), open_store(f"sqlite://{tmp_path / 't.db'}")):
        mem = PagedMemory(store=store, conversation_id="c", **SETTINGS)
        for i in range(5):
            mem.add(*_say(i))
        with pytest.raises(InvalidChange, match="cannot remove"):
            store.commit("c", ChangeSet(truncate=3))
        with pytest.raises(InvalidChange, match="cannot remove"):
            store.commit("c", ChangeSet(truncate=6))
        assert len(store.load("c").turns) == 5
