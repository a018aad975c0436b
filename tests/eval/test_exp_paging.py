"""Paging-family experiments: topology definition, paper averages, generic labels, selection, registry."""

from __future__ import annotations

import pytest

from copage.core.keywords import EXTRACTORS, get_extractor
from copage.core.registry import UnknownNameError
from copage.core.types import Page, Turn
from copage.eval.datasets.probes import Conversation, Probe
from copage.eval.experiments.catalog import EXPERIMENTS, ORDER, Unavailable, get_experiment
from copage.eval.experiments.paging import boundary_table, policy_table
from copage.eval.experiments.selection import choose_threshold
from copage.eval.experiments.topology import revisit_rate
from copage.eval.simulation import Cell


def conv(evidence: list[list[int]], turns: int = 20) -> Conversation:
    ts = tuple(Turn(id=f"t{i}", role="user" if i % 2 == 0 else "assistant", text=f"word{i}")
               for i in range(turns))
    probes = tuple(Probe(id=f"q{k}", question="?", answer="x", category=4,
                         evidence=tuple(f"t{i}" for i in ev)) for k, ev in enumerate(evidence))
    return Conversation("c", ts, probes)


def test_revisit_rate_counts_accesses_to_pages_seen_by_earlier_probes() -> None:
    cell = Cell("fixed_5", "lru", 2, "heuristic", order="file")
    # pages: t0-4 -> p1, t5-9 -> p2, ...; probe accesses p1, p1, p2+p1 -> 4 accesses, 2 revisits
    assert revisit_rate(conv([[0], [3], [6, 1]]), cell) == (0.5, 4)
    assert revisit_rate(conv([[0], [6], [12]]), cell) == (0.0, 3)
    assert revisit_rate(conv([]), cell) == (None, 0)


def test_paper_averages_leave_copage_policies_out() -> None:
    rows = [{"dataset": "d", "model": None, "boundary": "fixed_5", "policy": p, "hit_rate": h,
             "pages_mean": 4.0} for p, h in (("fifo", 0.2), ("lru", 0.4), ("lfu", 0.6),
                                             ("belady", 0.8), ("adaptive", 1.0))]
    b = boundary_table(rows)[0]
    assert b["hit_rate"] == pytest.approx(0.5) and b["copage_hit_rate"] == 1.0
    pol = {r["policy"]: r for r in policy_table(rows)}
    assert pol["belady"]["belady_gap_hit_rate"] == pytest.approx(0.2)
    assert pol["adaptive"]["group"] == "copage"


def test_generic_extractor_gives_category_labels() -> None:
    assert "generic" in EXTRACTORS
    page = Page("p1", 0, (), "My doctor changed my prescription; my budget is $300.", 12)
    kws = get_extractor("generic").extract(page, None, 4)  # type: ignore[arg-type]
    assert kws == ("medical information", "budget and money", "general conversation",
                   "personal preferences")
    plain = Page("p2", 1, (), "zzz qqq", 2)
    assert get_extractor("generic").extract(plain, None, 2) == ("general conversation",  # type: ignore[arg-type]
                                                              "personal preferences")


def test_selection_threshold_separates_by_mass() -> None:
    rows = [{"mass": m, "faults_heuristic": 1, "faults_discriminative": 1,
             "routing_heuristic": h, "routing_discriminative": d}
            for m, h, d in ((1.0, 0.0, 1.0), (2.0, 0.0, 1.0), (5.0, 1.0, 0.0), (6.0, 1.0, 0.0))]
    assert choose_threshold(rows) == pytest.approx(3.5)


def test_registry_lists_names_and_degrades_when_a_module_is_missing() -> None:
    assert set(ORDER) == set(EXPERIMENTS.names())
    with pytest.raises(UnknownNameError, match="paging"):
        get_experiment("nope")
    assert get_experiment("paging").name == "paging"
    missing = Unavailable("nll", "no module")
    assert "not available" in missing.run(None).notes[0]  # type: ignore[arg-type]
