"""PagedMemory.search: evicted pages ranked by BM25, read-only."""

from __future__ import annotations

import pytest
from adapter_fixtures import PAGING, TURNS

from copage import PagedMemory
from copage.core.retrieval import BM25Index
from copage.core.text import content_words


def _memory() -> PagedMemory:
    mem = PagedMemory(**PAGING)
    for role, text in TURNS:
        mem.add(role, text)
    return mem


def test_search_ranks_evicted_pages_and_pages_nothing_in() -> None:
    mem = _memory()
    assert "p1" in mem.evicted and "p3" in mem.evicted
    before = (mem.resident, mem.stats().faults, mem.version)
    hits = mem.search("locker code")
    assert [h.page for h in hits][:1] == ["p1"]
    assert hits[0].bookmark == mem.bookmarks()["p1"]
    assert hits[0].score > 0
    assert (mem.resident, mem.stats().faults, mem.version) == before  # read-only
    assert mem.search("dentist appointment")[0].page == "p3"


def test_search_scores_match_a_bm25_index_over_the_evicted_pages() -> None:
    mem = _memory()
    evicted = [p for p in mem.pages if p.id in mem.evicted]
    ref = BM25Index([content_words(p.text) for p in evicted])
    query = "Lisbon budget euros"
    got = {h.page: h.score for h in mem.search(query, limit=50)}
    scores = ref.scores(sorted(set(content_words(query))))
    want = {evicted[i].id: s for i, s in enumerate(scores) if s > 0}
    assert got.keys() == want.keys()
    for pid, score in want.items():
        assert got[pid] == pytest.approx(score)


def test_search_limits_and_empty_cases() -> None:
    mem = _memory()
    assert len(mem.search("the", limit=3)) == 0  # stopwords only
    assert mem.search("zebra xylophone") == []
    assert len(mem.search("Lisbon dentist locker Marta", limit=2)) == 2
    with pytest.raises(ValueError, match="limit"):
        mem.search("x", limit=0)
    assert PagedMemory().search("anything") == []
