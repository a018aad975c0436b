"""Belady with a model (issue 16): the oracle cells run with the model too.

The scripted model is a test tool: it recalls the first bookmark once per probe.
"""

from __future__ import annotations

from pathlib import Path

from test_exp_model_paths import CONVERSATIONS, PROBES, SPEC, answerer, context, scripted, tiny  # noqa: F401

from copage.core.cache import PageCache
from copage.eval.datasets.probes import Dataset
from copage.eval.experiments.model_probe import probe_starts, run_cells
from copage.eval.oracle import ScheduledBelady
from copage.eval.simulation import Cell, access_sequence, schedule
from copage.llm import ChatRequest, ChatResponse


def test_scheduled_belady_follows_the_schedule_and_tolerates_unscheduled_recalls() -> None:
    future = ["p1", "p2", "p3", "p1", "p3"]
    policy = ScheduledBelady(future)
    cache = PageCache(policy, 2)
    cache.admit("p1")
    cache.admit("p2")
    cache.access("p2")  # an unscheduled recall: no error, the clock stays
    assert policy.cursor == 2
    evicted = cache.admit("p3")  # p2 is never scheduled again: it goes, not p1
    assert evicted == ["p2"] and policy.cursor == 3
    cache.access("p1")  # the scheduled next access
    assert policy.cursor == 4


def test_probe_starts_index_the_access_sequence(tiny: Dataset) -> None:  # noqa: F811
    from copage.core.boundaries import get_boundary
    from copage.core.paginate import paginate

    conv = tiny.conversations[0]
    cell = Cell("fixed_5", "belady", 1, "heuristic", order="file")
    spans = paginate(conv.turns, get_boundary("fixed_5"))
    page_of = {conv.turns[j].id: i for i, s in enumerate(spans) for j in range(s.start, s.end)}
    plan = schedule(conv, spans, cell)
    seq = access_sequence(spans, plan, page_of, len(conv.turns))
    starts = probe_starts(spans, plan, page_of, len(conv.turns))
    assert starts[0] == len(spans)  # probes at the end: every admit first
    for (_, probe), at in zip(plan, starts, strict=True):
        pages = sorted({page_of[e] for e in probe.evidence})
        assert seq[at: at + len(pages)] == [f"p{i + 1}" for i in pages]


def test_model_runs_keep_the_belady_cells(tmp_path: Path, tiny: Dataset) -> None:  # noqa: F811
    ctx = context(tiny, tmp_path, scripted(answerer), no_judge=True)
    cells = [Cell("fixed_5", p, 1, "heuristic", order="file") for p in ("lru", "belady")]
    rows, notes = run_cells(ctx, "paging", [tiny], cells)
    by_policy = {r["policy"]: r for r in rows if r["model"] == SPEC}
    assert set(by_policy) == {"lru", "belady"}
    assert by_policy["belady"]["probes"] == CONVERSATIONS * PROBES
    assert by_policy["belady"]["needs_recall"] is not None
    assert any("belady with the model" in n for n in notes)


def test_table14_from_model_rows_or_says_what_it_lacks(tmp_path: Path, tiny: Dataset) -> None:  # noqa: F811
    from copage.eval.report.paper import TABLE14_LACKS, table14

    free = [{"dataset": "d", "model": None, "boundary": "fixed_10", "keywords": "heuristic"}]
    assert table14(free) == [{"table14": TABLE14_LACKS}]
    ctx = context(tiny, tmp_path, scripted(answerer))
    rows, _ = run_cells(ctx, "generators", [tiny], [Cell("fixed_10", "lru", 1, "heuristic",
                                                          order="file")])
    model = [r for r in rows if r["model"] == SPEC]
    # the judge passes only the allergy probe (category 1) of the four categories
    assert model[0]["accuracy_cat1"] == 1.0 and model[0]["accuracy_cat2"] == 0.0
    assert model[0]["probes_cat1"] == CONVERSATIONS
    t14 = table14([{**r, "dataset": tiny.name, "boundary": "fixed_10", "keywords": "heuristic"}
                   for r in model])
    assert t14[0]["keywords"] == "heuristic" and t14[0][f"{tiny.name}/{SPEC} accuracy_cat1"] == 1.0


def test_the_scheduled_oracle_is_not_left_registered(tmp_path: Path, tiny: Dataset) -> None:  # noqa: F811
    from copage.core.policies import POLICIES

    ctx = context(tiny, tmp_path, scripted(answerer), no_judge=True)
    run_cells(ctx, "paging", [tiny], [Cell("fixed_5", "belady", 1, "heuristic", order="file")])
    assert "belady_scheduled" not in POLICIES.names()


def test_the_oracle_run_leaves_the_global_registries_unchanged_throughout(
        tmp_path: Path, tiny: Dataset) -> None:  # noqa: F811
    """``belady_scheduled`` lives in a registry of the run's own, passed in: the global
    POLICIES and EXTRACTORS hold the same names before, during (at every model call)
    and after the run."""
    from copage.core.keywords import EXTRACTORS
    from copage.core.policies import POLICIES
    from copage.eval.oracle import NAME, policies

    before = (POLICIES.names(), EXTRACTORS.names())
    during: list[tuple[list[str], list[str]]] = []

    def step(request: ChatRequest) -> ChatResponse | str:
        during.append((POLICIES.names(), EXTRACTORS.names()))
        return answerer(request)

    ctx = context(tiny, tmp_path, scripted(step), no_judge=True)
    rows, _ = run_cells(ctx, "paging", [tiny], [Cell("fixed_5", "belady", 1, "heuristic",
                                                      order="file")])
    assert next(r for r in rows if r["model"] == SPEC)["probes"] == CONVERSATIONS * PROBES
    assert during and all(names == before for names in during)
    assert (POLICIES.names(), EXTRACTORS.names()) == before
    assert NAME not in POLICIES and NAME in policies()
    assert policies() is not POLICIES and set(POLICIES.names()) < set(policies().names())


def test_paged_memory_sets_the_oracle_clock_and_no_other_policy() -> None:
    from copage.core.config import PagerConfig
    from copage.eval.methods.probe_driver import set_policy_clock
    from copage.eval.oracle import NAME, policies
    from copage.eval.sim_pager import with_future
    from copage.memory import PagedMemory

    mem = PagedMemory(config=with_future(PagerConfig(policy=NAME, policies=policies()),
                                         ["p1", "p2", "p1"]))
    assert set_policy_clock(mem, 2) is True
    assert set_policy_clock(mem, 1) is True  # never backwards
    assert mem.pager.cache.policy.cursor == 2  # type: ignore[attr-defined]
    assert set_policy_clock(PagedMemory(config=PagerConfig(policy="lru")), 2) is False
