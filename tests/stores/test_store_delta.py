"""Contract: ``load_since(since_version=v)`` returns only the bookmarks and page states
written by commits after version ``v`` (a process catching up reads only those)."""

from __future__ import annotations

from store_helpers import StoreFactory

from copage.core.types import Bookmark
from copage.stores.protocol import ChangeSet


def bookmark(i: int, word: str) -> Bookmark:
    return Bookmark(f"p{i + 1}", (word,), f"[p{i + 1}:{word}]", 3)


def test_rows_written_after_a_version(stores: StoreFactory) -> None:
    store = stores.open()
    store.create_conversation("c", {})
    v1 = store.commit("c", ChangeSet(bookmarks=[(0, bookmark(0, "a")), (1, bookmark(1, "b"))],
                                     page_state=[(0, {"n": 1}), (1, {"n": 1})]))
    v2 = store.commit("c", ChangeSet(bookmarks=[(1, bookmark(1, "c"))],
                                     page_state=[(0, {"n": 2})]))
    v3 = store.commit("c", ChangeSet(state={"x": 1}))
    since = store.load_since  # type: ignore[attr-defined]
    everything = since("c")
    assert everything.bookmarks == {0: bookmark(0, "a"), 1: bookmark(1, "c")}
    assert everything.page_state == {0: {"n": 2}, 1: {"n": 1}}
    after1 = since("c", since_version=v1)
    assert (after1.bookmarks, after1.page_state) == ({1: bookmark(1, "c")}, {0: {"n": 2}})
    after2 = since("c", since_version=v2)
    assert (after2.bookmarks, after2.page_state, after2.state) == ({}, {}, {"x": 1})
    assert since("c", since_version=0).bookmarks == everything.bookmarks
    assert store.load("c").page_state == everything.page_state and v3 == 3
