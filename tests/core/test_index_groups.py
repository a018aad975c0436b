"""The bounded, multi-level bookmark index (issue 17): groups of older pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from copage import PagedMemory
from copage.core.config import PagerConfig
from copage.core.groups import merge_pair, parse_range
from copage.core.pager import Pager
from copage.core.registry import UnknownNameError
from copage.core.types import Turn
from copage.stores.sqlite import SQLiteStore

TOPICS = ["pottery class", "Lisbon trip", "dentist Dr Okafor", "garden tomatoes", "chess club",
          "marathon training", "violin lessons", "beagle Miso", "tax return", "sourdough bread",
          "kayak rental", "French course", "roof repair", "birthday party", "camping gear"]


def line(i: int) -> str:
    topic = TOPICS[(i // 10) % len(TOPICS)]
    return f"About the {topic}: detail {i} with word{i % 97} and item{i % 89}."


def drive(mem: PagedMemory, start: int, stop: int) -> None:
    for i in range(start, stop):
        mem.add("user" if i % 2 == 0 else "assistant", line(i))


@pytest.mark.parametrize(("turns", "keywords"), [(300, "contrast"), (1000, "contrast"),
                                                 (10_000, "heuristic")])
def test_index_fits_its_cap_at_any_length(turns: int, keywords: str) -> None:
    # paged by page count (the paper's k = 4), so that the index fills from the start
    cfg = PagerConfig(keywords=keywords, resident_pages=4)
    assert cfg.index == "grouped" and cfg.index_tokens == 512  # the library default
    pager = Pager(cfg)
    most = 0
    for i in range(turns):
        pager.add(Turn(f"t{i}", "user" if i % 2 == 0 else "assistant", line(i)))
        most = max(most, pager.index_tokens())
    assert most <= cfg.index_tokens
    block = pager.bookmark_index()
    assert pager.tokenizer.count(block) <= cfg.index_tokens * 1.15  # separators uncounted
    if turns >= 1000:
        assert pager.groups and pager.groups[0].start == 0
        # Groups tile the oldest pages without gaps; the newest pages have their own lines.
        assert all(a.end == b.start for a, b in zip(pager.groups, pager.groups[1:], strict=False))
        assert pager.grouped_end <= len(pager.pages) - cfg.resident_pages  # type: ignore[operator]
        if turns == 10_000:
            assert max(g.size for g in pager.groups) > cfg.group_pages  # merged: a coarser level


def test_flat_index_is_the_papers() -> None:
    pager = Pager(PagerConfig(index="flat", resident_pages=4))
    for i in range(1000):
        pager.add(Turn(f"t{i}", "user" if i % 2 == 0 else "assistant", line(i)))
    assert not pager.groups
    lines = pager.bookmark_index().split("\n")[1:]
    assert len(lines) == len(pager.evicted) and pager.index_tokens() > 512


def test_index_changes_only_in_batches_and_at_page_closes() -> None:
    # Group lines change only when a batch regroups; page lines only on a turn that
    # closes a page (the new eviction's line, stale bookmarks refreshed): that turn's
    # request changes anyway, since the oldest resident page leaves the messages.
    pager = Pager(PagerConfig(resident_pages=4))  # paged from the fifth page on
    before = pager.bookmark_index().split("\n")
    regroups = closes = 0
    for i in range(2000):
        groups, pages = list(pager.groups), len(pager.pages)
        pager.add(Turn(f"t{i}", "user" if i % 2 == 0 else "assistant", line(i)))
        now = pager.bookmark_index().split("\n")
        if pager.groups != groups:
            regroups += 1
        elif len(pager.pages) == pages:
            assert now == before, i  # no page closed: the index is the same text
        else:
            closes += 1
            n = 1 + len(groups)  # header and group lines stay as they were
            assert now[:n] == before[:n] or before == ["Evicted pages: none yet."], i
        before = now
    assert regroups and closes > 5 * regroups


def test_recall_of_a_group_pages_in_its_best_page() -> None:
    mem = PagedMemory(boundary="fixed_4", resident_pages=4, index_tokens=64, group_pages=4)
    drive(mem, 0, 10)
    mem.add("user", "The Zanzibar ferry leaves at noon from pier seven.")  # page 3
    drive(mem, 11, 200)
    group = mem.pager.groups[0]
    assert parse_range(group.name) == (group.start, group.end) and group.start == 0
    mem.add("user", "When does the Zanzibar ferry leave?")
    assert f"[{group.name}:" in mem.context().messages[0]["content"]
    result = mem.recall_result(group.name)
    assert result.status == "paged_in" and result.page == "p3"
    assert "Zanzibar ferry" in result.text and group.name in result.text
    again = mem.recall_result(group.name)  # the next best evicted page of the group
    assert again.status == "paged_in" and again.page != "p3"
    bad = mem.recall_result("p2-p3")
    assert bad.status == "error" and "no group p2-p3" in bad.text


@pytest.mark.parametrize("resident", [2, 5])  # evict_batch 1 (capped) and 2 (the default)
def test_groups_survive_reopening(tmp_path: Path, resident: int) -> None:
    settings = {"boundary": "fixed_3", "resident_pages": resident, "index_tokens": 64,
                "group_pages": 2}
    ref = PagedMemory(conversation_id="ref", **settings)
    drive(ref, 0, 160)
    db = tmp_path / "c.db"
    first = PagedMemory(store=SQLiteStore(db), conversation_id="c1", **settings)
    drive(first, 0, 90)
    assert first.pager.groups
    first.store.close()
    again = PagedMemory(store=SQLiteStore(db), conversation_id="c1")
    assert [g.bookmark for g in again.pager.groups] == [g.bookmark for g in first.pager.groups]
    drive(again, 90, 160)
    assert again.pager.bookmark_index() == ref.pager.bookmark_index()
    assert again.stats().bookmark_tokens == ref.stats().bookmark_tokens
    assert again.resident == ref.resident and again.config.evict_batch == min(2, resident - 1)


def test_bad_index_settings() -> None:
    with pytest.raises(UnknownNameError, match="valid indexes: flat, grouped"):
        PagerConfig(index="tree")
    with pytest.raises(UnknownNameError, match="group_by"):
        PagerConfig(group_by="week")
    with pytest.raises(ValueError, match="index_tokens must be >= 64"):
        PagerConfig(index_tokens=10)
    with pytest.raises(ValueError, match="group_pages must be >= 2"):
        PagerConfig(group_pages=1)


def test_merge_prefers_equal_sizes() -> None:
    from copage.core.groups import Group
    from copage.core.types import Bookmark

    def g(a: int, b: int) -> Group:
        return Group(a, b, Bookmark(f"p{a + 1}-p{b}", (), "", 0, "minimal"))

    assert merge_pair([g(0, 16), g(16, 24), g(24, 32)]) == 1
    assert merge_pair([g(0, 16), g(16, 24)]) == 0
    assert merge_pair([g(0, 8)]) is None
