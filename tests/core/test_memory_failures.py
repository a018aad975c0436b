"""After any failed operation, PagedMemory is exactly the stored state or refuses further
work with a clear error until reloaded (issue 11, defect 2)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from copage import PagedMemory
from copage.memory import MemoryOutOfSync
from copage.stores import ChangeSet, PageStore, StoredConversation, StoreError
from copage.stores.sqlite import SQLiteStore


class FlakyStore:
    """A real SQLite store whose commit and load can be made to fail (a lost connection)."""

    def __init__(self, inner: PageStore) -> None:
        self.inner = inner
        self.fail_commit = self.fail_load = False

    def commit(self, conversation_id: str, change: ChangeSet, **kw: Any) -> int:
        if self.fail_commit:
            raise StoreError("connection lost during commit")
        return self.inner.commit(conversation_id, change, **kw)

    def load(self, conversation_id: str, **kw: Any) -> StoredConversation:
        if self.fail_load:
            raise StoreError("connection lost during load")
        return self.inner.load(conversation_id, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _texts(mem: PagedMemory) -> list[str]:
    return [str(m["content"]) for m in mem.context().messages[1:]]


def _mem(tmp_path: Path) -> tuple[PagedMemory, FlakyStore]:
    store = FlakyStore(SQLiteStore(tmp_path / "c.db"))
    mem = PagedMemory(store=store, conversation_id="c", boundary="fixed_2",  # type: ignore[arg-type]
                      resident_pages=1)
    for i in range(4):
        mem.add("user" if i % 2 == 0 else "assistant", f"stored turn {i}")
    return mem, store


def test_failed_commit_with_failed_reload_refuses_until_reload(tmp_path: Path) -> None:
    mem, store = _mem(tmp_path)
    store.fail_commit = store.fail_load = True
    with pytest.raises(MemoryOutOfSync, match="reloading the stored state failed too"):
        mem.add("user", "never stored")
    # The unstored turn is never shown or built upon: every call refuses, clearly.
    for call in (mem.context, mem.stats, lambda: mem.turns, lambda: mem.add("user", "next"),
                 lambda: mem.recall("p1"), mem.close_page):
        with pytest.raises(MemoryOutOfSync, match="call reload\\(\\) or reopen it"):
            call()
    store.fail_commit = False
    with pytest.raises(StoreError):  # the store is still unreadable: still refused
        mem.reload()
    with pytest.raises(MemoryOutOfSync):
        mem.context()
    store.fail_load = False
    mem.reload()
    assert [t.text for t in mem.turns] == [f"stored turn {i}" for i in range(4)]
    assert "never stored" not in " ".join(_texts(mem))
    mem.add("user", "after recovery")  # the next add is stored, not lost
    again = PagedMemory(store=SQLiteStore(tmp_path / "c.db"), conversation_id="c", create=False)
    assert [t.text for t in again.turns][-1] == "after recovery" and len(again.turns) == 5


def test_failed_commit_with_working_reload_is_exactly_the_stored_state(tmp_path: Path) -> None:
    mem, store = _mem(tmp_path)
    before = (_texts(mem), mem.stats(), mem.version)
    store.fail_commit = True
    with pytest.raises(StoreError, match="connection lost during commit"):
        mem.add("user", "never stored")
    assert (_texts(mem), mem.stats(), mem.version) == before
    store.fail_commit = False
    mem.add("user", "next")
    assert [t.text for t in mem.turns][-1] == "next" and len(mem.turns) == 5


def test_failed_transaction_with_failed_reload_refuses(tmp_path: Path) -> None:
    mem, store = _mem(tmp_path)
    with pytest.raises(MemoryOutOfSync), mem.transaction():
        mem.add("user", "pending")
        store.fail_load = True
        raise RuntimeError("the model call failed")
    with pytest.raises(MemoryOutOfSync):
        mem.context()
    store.fail_load = False
    mem.reload()
    assert len(mem.turns) == 4
