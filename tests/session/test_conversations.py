"""The one opener (``copage.session.opening``): lock, cache, load or create."""

from __future__ import annotations

from pathlib import Path

import pytest

from copage.core.config import PagerConfig
from copage.memory import PagedMemory
from copage.session.opening import Conversations, read
from copage.stores import open_store
from copage.stores.protocol import ConversationNotFound

CONFIG = PagerConfig(boundary="fixed_4", policy="lru", resident_pages=2)


def _config() -> PagerConfig:
    return CONFIG


def _count_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The conversation ids loaded in full (``PagedMemory._load``) from now on."""
    loads: list[str] = []
    real = PagedMemory._load

    def counting(self: PagedMemory, expect: PagerConfig | None = None) -> None:
        loads.append(self.conversation_id)
        real(self, expect)

    monkeypatch.setattr(PagedMemory, "_load", counting)
    return loads


def test_another_writers_commit_is_caught_up_by_refresh_not_reloaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite://{tmp_path / 'two.db'}"
    a, b = Conversations(open_store(url)), Conversations(open_store(url))  # two processes
    with a.use("c", create=_config) as mem:
        for i in range(10):
            mem.add("user" if i % 2 == 0 else "assistant", f"turn {i} about topic {i}")
    with b.use("c") as mem:
        first = mem
    loads = _count_loads(monkeypatch)
    with a.use("c") as mem:
        mem.add("user", "written by A")
        mem.add("assistant", "answered at A")
    with b.use("c") as mem:
        assert mem is first  # the cached object, caught up
        assert [t.text for t in mem.turns][-2:] == ["written by A", "answered at A"]
        mem.add("user", "written by B")
    assert b.cache.reloads == 1 and loads == []  # refresh, no full load
    fresh = read(b.store, "c")
    assert [t.text for t in fresh.turns] == [t.text for t in first.turns]
    assert fresh.resident == first.resident and fresh.version == first.version


def test_an_exception_leaves_nothing_cached(tmp_path: Path) -> None:
    conv = Conversations(open_store(f"sqlite://{tmp_path / 'x.db'}"))
    with conv.use("c", create=_config) as mem:
        mem.add("user", "kept")
    assert conv.cache.holds("default", "c")
    with pytest.raises(RuntimeError), conv.use("c") as mem:
        before = mem
        raise RuntimeError("the caller's work failed")
    assert not conv.cache.holds("default", "c")
    with conv.use("c") as mem:
        assert mem is not before  # loaded again from the store
        assert [t.text for t in mem.turns] == ["kept"]


def test_a_missing_conversation_is_not_created_without_create() -> None:
    conv = Conversations(open_store("memory://"))
    with pytest.raises(ConversationNotFound), conv.use("absent"):
        pass
    assert not conv.store.exists("absent", tenant="default")
    with pytest.raises(ConversationNotFound):
        read(conv.store, "absent")


def test_create_gives_the_settings_and_may_refuse() -> None:
    conv = Conversations(open_store("memory://"))

    def refuse() -> PagerConfig:
        raise ValueError("not this request")

    with pytest.raises(ValueError, match="not this request"):
        conv.open("t", "c", refuse)
    assert not conv.store.exists("c", tenant="t")  # refused: nothing created
    opened = conv.open("t", "c", _config)
    assert opened.created and opened.mem.config == CONFIG
    conv.put(opened.mem)
    again = conv.open("t", "c", refuse)  # cached: create is not asked
    assert again.mem is opened.mem and not again.created
    assert not conv.open("t", "c", refuse).created  # taken: loaded from the store


def test_warm_is_cached_or_new(tmp_path: Path) -> None:
    conv = Conversations(open_store(f"sqlite://{tmp_path / 'w.db'}"))
    assert conv.warm("default", "c")  # not stored: a new conversation, no load
    with conv.use("c", create=_config) as mem:
        mem.add("user", "x")
    assert conv.warm("default", "c")
    conv.discard("default", "c")
    assert not conv.warm("default", "c")  # stored, not cached: a full load


def test_the_tenant_is_part_of_the_key() -> None:
    conv = Conversations(open_store("memory://"))
    with conv.use("c", tenant="alice", create=_config) as mem:
        mem.add("user", "alice's")
    with pytest.raises(ConversationNotFound), conv.use("c", tenant="bob"):
        pass
    with conv.use("c", tenant="bob", create=_config) as other:
        assert other.turns == []


def test_delete_forgets_the_cached_copy_and_the_stored_one(tmp_path: Path) -> None:
    """The one delete (proxy, MCP, ``copage conversations delete``): under the store's
    lock, the cached object and the stored rows go; the same id then starts afresh."""
    convs = Conversations(open_store(f"sqlite://{tmp_path / 'd.db'}"))
    with convs.use("c", create=_config) as mem:
        mem.add("user", "remember the blue door")
    assert convs.cache.holds("default", "c")
    convs.delete("default", "c")
    assert not convs.cache.holds("default", "c") and not convs.store.exists("c")
    with convs.use("c", create=_config) as again:
        assert again is not mem and again.turns == []
    with pytest.raises(ConversationNotFound):
        convs.delete("default", "never-stored")
