"""PagedMemory.search: closed pages (or the evicted ones) ranked by BM25, read-only."""

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
    got = {h.page: h.score for h in mem.search(query, limit=50, include_resident=False)}
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


def test_search_covers_every_closed_page_by_default_and_says_which_are_resident() -> None:
    mem = _memory()
    ref = BM25Index([content_words(p.text) for p in mem.pages])  # IDF over every closed page
    query = "Lisbon budget euros Biscuit"
    hits = mem.search(query, limit=50, dense=None)
    scores = ref.scores(sorted(set(content_words(query))))
    want = {p.id: s for p, s in zip(mem.pages, scores, strict=True) if s > 0}
    assert {h.page: h.score for h in hits} == pytest.approx(want)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert {h.page for h in hits if h.resident} == set(want) & set(mem.resident)
    assert any(h.resident for h in hits) and any(not h.resident for h in hits)
    evicted_only = mem.search(query, limit=50, dense=None, include_resident=False)
    assert {h.page for h in evicted_only} == set(want) - set(mem.resident)
    assert not any(h.resident for h in evicted_only)


def test_a_chat_that_is_not_paged_is_searched_all_the_same() -> None:
    """At the defaults nothing is evicted while the chat fits the budget; search still
    finds what was said, in other word forms too ("peanut allergy" / "allergic to peanuts")."""
    mem = PagedMemory(keywords="heuristic")
    mem.add("user", "I'm allergic to peanuts, keep that in mind.")
    mem.add("assistant", "Noted!")
    for i in range(40):
        mem.add("user" if i % 2 == 0 else "assistant", f"Chat about the garden, item {i}.")
    assert mem.pages and not mem.evicted
    hits = mem.search("peanut allergy", dense=None)
    assert [h.page for h in hits][:1] == ["p1"] and hits[0].resident
    assert mem.search("peanut allergy", dense=None, include_resident=False) == []
    for i in range(12):  # more pages close: the index follows them
        mem.add("user" if i % 2 == 0 else "assistant", f"My cousin Ilse moved to Tromso, note {i}.")
    assert {h.page for h in mem.search("Ilse Tromso", limit=50, dense=None)} == {
        p.id for p in mem.pages if "Tromso" in p.text}
