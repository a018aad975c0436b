"""Passages: the overlapping windows the fill ranks, their runs, and query feedback."""

from __future__ import annotations

import pytest

from copage import PagedMemory
from copage.core.passages import PassageIndex, expand, runs_of
from copage.core.retrieval import BM25Index
from copage.core.text import index_terms, query_terms, stem
from copage.session import Speculator


def chat(lines: list[str], **settings: object) -> PagedMemory:
    mem = PagedMemory(**{"boundary": "fixed_4", "resident_pages": 1, **settings})
    for i, text in enumerate(lines):
        mem.add("user" if i % 2 == 0 else "assistant", text)
    return mem


FILLER = [f"We talked about the football match number {i} and the weather." for i in range(24)]


def test_one_passage_per_closed_turn_matches_a_reference_bm25() -> None:
    mem = chat(FILLER[:12])
    index = mem.passages
    turns = [t for p in mem.pages for t in p.turns]
    assert [t.turn for t in index.turns] == turns
    width = index.width
    assert len(index) == len(turns) - width + 1  # a window starts at every complete position
    ref: BM25Index[int] = BM25Index()
    for s in range(len(turns) - width + 1):
        ref.add(s, index_terms(index.text(s, s + width)))
    q = query_terms("football match 7 weather")
    assert index.top(q, 5) == ref.top(q, 5)


def test_the_index_follows_pages_closed_and_taken_back() -> None:
    mem = chat(FILLER[:8])
    first = len(mem.passages)
    for text in FILLER[8:16]:
        mem.add("user", text)
    assert len(mem.passages) > first  # pages closed since are added
    fresh = PassageIndex().sync(mem.pager.pages)
    assert mem.passages.turns == fresh.turns and len(mem.passages) == len(fresh)
    shorter = PassageIndex().sync(mem.pager.pages[:1])
    assert shorter.sync(mem.pager.pages[:1]) is shorter and len(shorter.turns) == 4
    assert len(PassageIndex().sync(mem.pager.pages).sync(mem.pager.pages[:1]).turns) == 4


def test_runs_are_cut_where_the_page_changes() -> None:
    mem = chat(FILLER[:12])
    index = mem.passages
    assert runs_of(index, [5, 2, 3, 4, 9]) == [(0, 2, 4), (1, 4, 6), (2, 9, 10)]


def test_feedback_keeps_the_query_first_and_adds_shared_words() -> None:
    mem = chat([*FILLER[:6], "My cousin Ilse lives in Tromso now.", "How nice, Norway!",
                *FILLER[6:16], "Ilse says Tromso had polar nights all winter.", "Brr, dark.",
                *FILLER[16:24]])
    index = mem.passages
    q = query_terms("Where does my cousin live?")
    terms = expand(index, q)
    assert terms[: 2 * len(q)] == [t for t in q for _ in range(2)]
    added = terms[2 * len(q):]
    assert stem("ilse") in added and stem("tromso") in added and len(added) <= 5
    assert expand(index, q) == terms  # deterministic
    assert expand(PassageIndex(), q) == list(q)


def test_feedback_brings_a_turn_that_shares_no_word_with_the_question() -> None:
    mem = chat([*FILLER[:6], "My cousin Ilse lives in Tromso now.", "How nice, Norway!",
                *FILLER[6:16], "Ilse says Tromso had polar nights all winter.", "Brr, dark.",
                *FILLER[16:24]])
    assert {"p2", "p5"} <= set(mem.evicted)
    spec = Speculator(threshold=0.0, whole=False).plan(mem, "Where does my cousin live?")
    assert "polar nights" in spec.text  # found through the feedback words Ilse and Tromso
    assert "lives in Tromso" in spec.text


@pytest.mark.parametrize("width", [0, -1, 1.5, True])
def test_bad_width_is_refused(width: object) -> None:
    with pytest.raises(ValueError, match="passage width"):
        PassageIndex(width)  # type: ignore[arg-type]
