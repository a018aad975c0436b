"""What one turn writes and recomputes does not grow with the conversation.

The pager's snapshot is bounded (each page's own state goes in its own row, written
only when it changes), and the bookmark index's tokens and lines are kept up to date
instead of being summed or joined over every evicted page; the prompt-cache median is
kept on a sorted list. Sizes are asserted here, never times (those are in bench/).
"""

from __future__ import annotations

import json
import random
import statistics

import pytest

from copage import PagedMemory
from copage.core import prompt
from copage.core.changes import ChangeSet
from copage.core.config import PagerConfig
from copage.core.pager import Pager
from copage.core.promptcache import PromptMeter
from copage.core.tokens import get_tokenizer
from copage.core.types import Turn


def turn(i: int) -> Turn:
    role = "user" if i % 2 == 0 else "assistant"
    return Turn(id=f"t{i}", role=role, text=f"turn {i}: the item {i} and the word w{i % 37}")


def committed(pager: Pager, i: int) -> ChangeSet:
    pager.add(turn(i))
    return pager.drain()


@pytest.mark.parametrize("policy", ["lru", "lfu", "fifo"])
def test_the_snapshot_and_page_rows_of_a_turn_stay_bounded(policy: str) -> None:
    pager = Pager(PagerConfig(boundary="fixed_4", resident_pages=2, policy=policy))
    sizes: list[int] = []
    for i in range(1600):
        change = committed(pager, i)
        if i % 97 == 5 and pager.evicted:
            pager.recall(pager.evicted[i % len(pager.evicted)])
            change = pager.drain()
        if change.state is not None and i > 100:
            sizes.append(len(json.dumps(change.state)))
        # the closed page, a page-in, its victims and the stale bookmarks refreshed
        assert len(change.page_state) <= 4 + 2 * pager.config.refresh_per_page
    assert len(pager.pages) == 400
    # Bounded by the resident set and the index's groups (about 1.5 KB here); before, it
    # held every page's history and epoch too: 18 KB at these 400 pages.
    assert max(sizes) < 2500, max(sizes)


def test_page_rows_rebuild_the_same_pager() -> None:
    cfg = PagerConfig(boundary="fixed_3", resident_pages=2, policy="lfu")
    pager = Pager(cfg)
    rows: dict[int, dict[str, object]] = {}
    stored_turns: list[Turn] = []
    pages, bookmarks, state = [], {}, {}
    rng = random.Random(3)
    for i in range(300):
        pager.add(turn(i))
        if i % 11 == 0 and pager.evicted:
            pager.access(rng.choice(pager.evicted))
        change = pager.drain()
        stored_turns += [t for _, t in change.turns]
        pages += change.pages
        bookmarks.update(dict(change.bookmarks))
        rows.update({i: dict(d) for i, d in change.page_state})
        state = dict(change.state) if change.state is not None else state
    again = Pager.restore(cfg, stored_turns, pages, bookmarks, json.loads(json.dumps(state)),
                          page_state=rows)
    assert again.cache.snapshot() == pager.cache.snapshot()
    assert [again.page_state(p.index) for p in again.pages] == [
        pager.page_state(p.index) for p in pager.pages]
    for i in range(300, 330):  # and it continues alike
        for p in (pager, again):
            p.add(turn(i))
            p.access(p.evicted[0])
        assert again.context("w3").messages == pager.context("w3").messages
    with pytest.raises(ValueError, match="no stored state for page p1"):
        Pager.restore(cfg, stored_turns, pages, bookmarks, state,
                      page_state={k: v for k, v in rows.items() if k})


@pytest.mark.parametrize("index", ["grouped", "flat"])
def test_index_tokens_and_lines_kept_up_to_date_match_a_recount(index: str) -> None:
    mem = PagedMemory(boundary="fixed_2", resident_pages=3, index=index, index_tokens=120,
                      keywords="contrast")
    pager = mem.pager
    rng = random.Random(7)
    for i in range(400):
        mem.add("user" if i % 2 == 0 else "assistant", f"note {i} about w{rng.randrange(60)}")
        if i % 7 == 0 and mem.evicted:
            mem.recall(rng.choice(mem.evicted))
        if i % 13 == 0:
            mem.refresh() if i % 26 == 0 else None
        pager = mem.pager
        end = pager.grouped_end
        tail = [j for j in sorted(pager._evicted_set) if j >= end]
        expected = (sum(pager.books[j].bookmark.tokens for j in pager._evicted_set)
                    if not pager.groups else pager.grouped.group_tokens
                    + sum(pager.books[j].bookmark.tokens for j in tail))
        assert pager.index_tokens() == expected
        lines = [text for text, _ in pager.index_entries()]
        assert pager.bookmark_index() == prompt.bookmarks_block(
            lines, grouped=bool(pager.groups), example_range="[p1-p8: keyword]")
    if index == "grouped":
        assert pager.groups
    mem.refresh_bookmarks()
    pager = mem.pager
    assert pager.bookmark_index() == prompt.bookmarks_block(
        [t for t, _ in pager.index_entries()], grouped=bool(pager.groups),
        example_range="[p1-p8: keyword]")


def test_prompt_cache_median_matches_statistics(monkeypatch: pytest.MonkeyPatch) -> None:
    import copage.core.promptcache as pc

    monkeypatch.setattr(pc, "MAX_SHARES", 25)
    meter = PromptMeter(get_tokenizer("estimate-v1"))
    rng = random.Random(1)
    words = ["alpha", "beta", "gamma", "delta"]
    for n in range(1, 80):
        content = " ".join(rng.choice(words) for _ in range(rng.randrange(1, 12)))
        meter.record([{"role": "user", "content": content}], [], 10, 1)
        assert meter.summary()["prefix_share_median"] == statistics.median(meter.shares)
        assert len(meter.shares) == min(n, 25)
