"""A conversation reopened from a store continues exactly where it was."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from copage import PagedMemory
from copage.stores.sqlite import SQLiteStore

POLICIES = ["fifo", "lru", "lfu", "lrfu", "adaptive", "query"]


def script(i: int) -> tuple[str, str]:
    role = "user" if i % 2 == 0 else "assistant"
    subjects = ["peanut allergy", "Lisbon budget $900", "grant deadline May 2",
                "dentist Dr. Lee", "Rust only", "sister Ana 555-0101", "yoga Tuesdays"]
    return role, f"{subjects[(i * 7) % len(subjects)]} note {i}"


def drive(mem: PagedMemory, start: int, stop: int) -> None:
    for i in range(start, stop):
        mem.add(*script(i))
        if i % 9 == 4 and mem.evicted:
            mem.recall(mem.evicted[i % len(mem.evicted)])


def snapshot(mem: PagedMemory) -> str:
    ctx = mem.context("what about the budget?")
    return json.dumps([ctx.messages, mem.stats().to_dict(), mem.resident,
                       {k: v.text for k, v in mem.bookmarks().items()}], sort_keys=True)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("keywords", ["heuristic", "discriminative"])
def test_reopen_continues_exactly(tmp_path: Path, policy: str, keywords: str) -> None:
    settings = {"boundary": "fixed_3", "policy": policy, "resident_pages": 2, "keywords": keywords}
    ref = PagedMemory(conversation_id="ref", **settings)
    drive(ref, 0, 60)

    db = tmp_path / "c.db"
    first = PagedMemory(store=SQLiteStore(db), conversation_id="c1", **settings)
    drive(first, 0, 31)
    first.store.close()
    again = PagedMemory(store=SQLiteStore(db), conversation_id="c1")
    assert again.config == first.config
    drive(again, 31, 60)
    assert snapshot(again) == snapshot(ref)


def test_reopen_with_other_settings_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    PagedMemory(store=url, conversation_id="a", policy="lru").add("user", "hi")
    with pytest.raises(ValueError, match="other settings"):
        PagedMemory(store=url, conversation_id="a", policy="fifo")


def test_failed_commit_leaves_memory_as_stored(tmp_path: Path) -> None:
    mem = PagedMemory(store=SQLiteStore(tmp_path / "c.db"), conversation_id="x",
                      boundary="fixed_2", resident_pages=1)
    drive(mem, 0, 8)
    before = snapshot(mem)

    def boom(*a: object, **k: object) -> int:
        raise OSError("disk full")

    real = mem.store.commit
    mem.store.commit = boom  # type: ignore[method-assign]
    with pytest.raises(OSError):
        mem.add("user", "this turn is not acknowledged")
    mem.store.commit = real  # type: ignore[method-assign]
    assert snapshot(mem) == before
    assert len(mem.turns) == 8


def test_settings_stored_before_the_grouped_index_reopen_as_they_paged() -> None:
    """A conversation stored before ``index``/``evict_batch`` existed keeps the flat index
    and single evictions when reopened, not today's defaults."""
    from copage.core.config import PagerConfig

    old = PagerConfig(index="flat", evict_batch=1).to_dict()
    del old["index"], old["evict_batch"], old["index_tokens"], old["group_pages"]
    cfg = PagerConfig.from_dict(old)
    assert (cfg.index, cfg.evict_batch) == ("flat", 1)
    assert PagerConfig.from_dict(PagerConfig().to_dict()) == PagerConfig()


def test_settings_stored_before_the_bookmark_cap_reopen_uncapped() -> None:
    """A conversation stored before ``bookmark_tokens`` existed keeps every keyword."""
    from copage.core.config import PagerConfig

    old = PagerConfig(n_keywords=4, bookmark_format="minimal", bookmark_tokens=None).to_dict()
    del old["bookmark_tokens"]
    cfg = PagerConfig.from_dict(old)
    assert (cfg.n_keywords, cfg.bookmark_format, cfg.bookmark_tokens) == (4, "minimal", None)
    new = PagerConfig()
    assert (new.n_keywords, new.bookmark_format, new.bookmark_tokens) == (12, "compact", 12)


@pytest.mark.parametrize("bad", [3, -1, True, 12.0, "12"])
def test_a_bad_bookmark_cap_is_refused_with_the_rule(bad: object) -> None:
    from copage.core.config import PagerConfig

    with pytest.raises(ValueError, match="bookmark_tokens must be None, 0"):
        PagerConfig(bookmark_tokens=bad)  # type: ignore[arg-type]
    assert PagerConfig(bookmark_tokens=0).bookmark_tokens is None  # 0: no cap


def test_refresh_bookmarks_is_stored(tmp_path: Path) -> None:
    """PagedMemory.refresh_bookmarks (batch keywords, placement "end") reaches the store."""
    from copage.core.keywords import get_extractor

    url = f"sqlite:///{tmp_path / 'c.db'}"
    settings = {"boundary": "fixed_3", "policy": "lru", "resident_pages": 2, "keywords": "tfidf",
                "bookmark_tokens": 0}  # every keyword shown: the batch result itself
    mem = PagedMemory(store=url, conversation_id="c", **settings)
    drive(mem, 0, 40)
    mem.close_page()
    batch = get_extractor("tfidf").extract_all(mem.pages, mem.config.n_keywords)
    before = {pid: b.keywords for pid, b in mem.bookmarks().items()}
    assert before != {pid: tuple(batch[pid]) for pid in before}  # made online, page by page
    mem.refresh_bookmarks()
    now = {pid: b.keywords for pid, b in mem.bookmarks().items()}
    assert now == {pid: tuple(batch[pid]) for pid in now}
    again = PagedMemory(store=url, conversation_id="c", create=False)
    assert {pid: b.keywords for pid, b in again.bookmarks().items()} == now
