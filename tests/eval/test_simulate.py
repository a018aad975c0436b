"""The paging simulation: hand-checked hits, Belady, routing, JSON keys."""

from __future__ import annotations

from typing import Any

import pytest

from copage.core.retrieval import BM25Index
from copage.core.text import content_words
from copage.eval.datasets import parse_locomo
from copage.eval.routing import bm25_candidates, route
from copage.eval.simulation import Cell, run_conversation, simulate

KEYS = ["dataset", "boundary", "policy", "k", "keywords", "format", "placement", "order", "seed",
        "conversations", "probes", "probes_skipped", "pages_mean", "hit_rate", "belady_hit_rate",
        "routing_top1", "routing_candidates_mean", "routing_chance", "bookmark_tokens_mean",
        "prompt_tokens_mean", "full_tokens_mean"]

TOPICS = ["peanut allergy Thai food", "Lisbon trip budget", "grant deadline letters",
          "dentist appointment Thursday", "Rust programming job"]


def dataset(evidence: list[list[int]]) -> Any:
    """Ten turns, pages of 2 turns (fixed_2): page i holds turns 2i and 2i+1."""
    turns = [{"speaker": "User" if i % 2 == 0 else "Assistant", "dia_id": f"D1:{i + 1}",
              "text": f"{TOPICS[i // 2]} detail {i}"} for i in range(10)]
    qa = [{"question": f"question about {TOPICS[(ev[0]) // 2]}", "answer": "x",
           "evidence": [f"D1:{e + 1}" for e in ev], "category": 4} for ev in evidence]
    return parse_locomo([{"sample_id": "c", "conversation": {
        "speaker_a": "User", "speaker_b": "Assistant", "session_1": turns}, "qa": qa}], name="toy")


def test_hits_and_faults_by_hand() -> None:
    # 5 pages, k=2, LRU: after the turns, p4 and p5 are resident.
    ds = dataset([[8], [0], [2], [0, 8], [9]])
    run = run_conversation(ds.conversations[0], Cell("fixed_2", "lru", 2, "heuristic", order="file"))
    hits = [o.hit for o in run.outcomes]
    # p5 hit; p1 fault (evicts p4); p2 fault (evicts p5); p1+p5: p5 missing -> fault; p5 hit
    assert hits == [True, False, False, False, True]
    assert run.outcomes[3].needed == ("p1", "p5")
    assert run.pages == 5


def test_fifo_differs_from_lru_by_hand() -> None:
    ds = dataset([[0], [8], [6], [0]])
    lru = run_conversation(ds.conversations[0], Cell("fixed_2", "lru", 2, "heuristic", order="file"))
    fifo = run_conversation(ds.conversations[0], Cell("fixed_2", "fifo", 2, "heuristic", order="file"))
    # after turns: [p4, p5]. p1 in (evict p4 for both); p5 hit (LRU refreshes it);
    # p4 in: LRU evicts p1, FIFO evicts p5; p1: LRU miss, FIFO hit
    assert [o.hit for o in lru.outcomes] == [False, True, False, False]
    assert [o.hit for o in fifo.outcomes] == [False, True, False, True]


def test_rows_have_the_documented_keys_and_belady_bounds() -> None:
    ds = dataset([[0], [2], [4], [0], [6], [2], [8], [0], [4, 6]])
    rows = simulate(ds, [Cell("fixed_2", p, 2, "heuristic", seed=3)
                         for p in ("fifo", "lru", "lfu", "belady", "lrfu", "adaptive", "query")])
    for row in rows:
        assert all(k in row for k in KEYS)
        assert row["probes"] == 9 and row["conversations"] == 1 and row["pages_mean"] == 5
        assert 0 <= row["hit_rate"] <= 1
        assert row["full_tokens_mean"] > row["bookmark_tokens_mean"] > 0
    belady = next(r for r in rows if r["policy"] == "belady")
    assert belady["hit_rate"] == belady["belady_hit_rate"]
    assert all(r["belady_hit_rate"] == belady["hit_rate"] for r in rows)


def test_interleaved_probes_come_after_their_evidence() -> None:
    ds = dataset([[0], [2], [9]])
    run = run_conversation(ds.conversations[0], Cell("fixed_2", "lru", 1, "heuristic",
                                                     placement="interleaved", seed=1))
    assert len(run.outcomes) == 3
    # asked right after its evidence turn: that page has just closed and is resident
    last = next(o for o in run.outcomes if o.probe_id.endswith("q2"))
    assert last.hit


def test_routing_tie_credit_and_fast_path_equals_bm25index() -> None:
    assert route("peanut", ["[p1:peanut]", "[p2:peanut]"], {0}).credit == 0.5
    assert route("peanut", ["[p1:peanut]", "[p2:budget]"], {0}).credit == 1.0
    assert route("peanut", ["[p1:peanut]", "[p2:budget]"], {1}).credit == 0.0
    assert route("zzz", ["[p1:a b]", "[p2:c]", "[p3:d]"], {2}).credit == pytest.approx(1 / 3)
    docs = ["[p1:peanut allergy, Thai]", "[p2:budget, Lisbon, $900]", "[p3:Thai budget dinner]"]
    q = "What Thai dinner fits my budget and allergy?"
    ref = BM25Index([content_words(d) for d in docs]).scores(content_words(q))
    assert bm25_candidates(q, docs) == ref


def test_order_and_seed_are_part_of_the_result() -> None:
    ds = dataset([[0], [2], [4], [6], [8], [0], [2], [4]])
    a = simulate(ds, [Cell("fixed_2", "fifo", 2, "heuristic", order="shuffled", seed=1)])[0]
    b = simulate(ds, [Cell("fixed_2", "fifo", 2, "heuristic", order="shuffled", seed=1)])[0]
    assert a == b


def test_grouped_index_routing_follows_a_group_to_its_page() -> None:
    # Issue 17: with the bounded index BM25 ranks the index lines; a group line is
    # right when the page it then gives is needed (best_page: BM25 over its pages'
    # text; bookmarks: over their bookmarks).
    from copage.core.config import PagerConfig
    from copage.core.pager import Pager
    from copage.core.types import Turn
    from copage.eval.simulation import _route_grouped

    pager = Pager(PagerConfig(boundary="fixed_4", resident_pages=4, index_tokens=64,
                              group_pages=4))  # paged by count: 200 short turns fit the budget
    for i in range(200):
        text = f"Filler {i} about weather{i % 13} and lunch{i % 11}."
        if i == 9:
            text = "The Zanzibar ferry leaves at noon from the old harbour, Zanzibar ferry."
        pager.add(Turn(f"t{i}", "user" if i % 2 == 0 else "assistant", text))
    group = pager.groups[0]
    assert group.start <= 2 < group.end and 2 in pager.index_entries()[0][1]
    # The question names the group's keywords (its line ranks first) and the ferry.
    question = " ".join(group.bookmark.keywords) + " Zanzibar ferry"
    for mode in ("best_page", "bookmarks"):
        credit, candidates, _, routed = _route_grouped(pager, question, ["p3"], mode)
        assert (credit, routed) == (1.0, "p3") and candidates == len(pager.index_entries())
        other = f"p{group.start + 1 if group.start != 2 else 4}"
        assert _route_grouped(pager, question, [other], mode)[0] == 0.0
