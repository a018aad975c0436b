"""Contract of ``version()`` and ``try_lock()`` (every store: memory, sqlite, postgres)."""

from __future__ import annotations

import pytest
from store_helpers import StoreFactory

from copage.core.types import Turn
from copage.stores import ChangeSet, InvalidChange, PageStore, VersionConflict


def _turn(seq: int) -> ChangeSet:
    return ChangeSet(turns=[(seq, Turn(f"t{seq + 1}", "user", f"turn {seq}"))])


def test_version_follows_commits(store: PageStore) -> None:
    assert store.version("c") is None
    store.create_conversation("c", {})
    assert store.version("c") == 0
    assert store.commit("c", _turn(0)) == 1
    assert store.version("c") == 1 == store.load("c").version
    assert store.commit("c", ChangeSet(), expected_version=1) == 2
    assert store.version("c") == 2


def test_version_unchanged_by_failed_commits(store: PageStore) -> None:
    store.create_conversation("c", {})
    store.commit("c", _turn(0))
    with pytest.raises(VersionConflict):
        store.commit("c", _turn(1), expected_version=0)
    with pytest.raises(InvalidChange):
        store.commit("c", _turn(5))  # not contiguous
    assert store.version("c") == 1


def test_version_is_per_tenant_and_gone_after_delete(store: PageStore) -> None:
    store.create_conversation("c", {}, tenant="a")
    store.commit("c", _turn(0), tenant="a")
    assert store.version("c", tenant="b") is None
    store.create_conversation("c", {}, tenant="b")
    assert (store.version("c", tenant="a"), store.version("c", tenant="b")) == (1, 0)
    store.delete_conversation("c", tenant="a")
    assert store.version("c", tenant="a") is None
    assert store.version("c", tenant="b") == 0


def test_version_sees_other_store_objects(stores: StoreFactory) -> None:
    first, second = stores.open(), stores.open()
    first.create_conversation("c", {})
    assert second.version("c") == 0
    second.commit("c", _turn(0))
    second.commit("c", _turn(1))
    assert first.version("c") == 2


def test_try_lock_does_not_wait(stores: StoreFactory) -> None:
    first, second = stores.open(), stores.open()
    with first.try_lock("c", tenant="t") as got:
        assert got is True
        with second.try_lock("c", tenant="t") as again:
            assert again is False  # held: answered at once, nothing taken
        with second.try_lock("c", tenant="other") as other:
            assert other is True  # another tenant's conversation is another lock
        with second.try_lock("d", tenant="t") as other_id:
            assert other_id is True
    with second.try_lock("c", tenant="t") as after:
        assert after is True  # released at the end of the block
    with second.lock("c", tenant="t"), first.try_lock("c", tenant="t") as busy:
        assert busy is False  # excludes the blocking lock() too
