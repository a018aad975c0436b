"""Shared helpers of the paging experiments: probe caps, the parallel grid, averages.

The grid itself is :func:`copage.eval.simulation.simulate`; cells are split by
boundary (the unit of its memo and Belady cache) over worker processes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from multiprocessing import get_context
from typing import Any

from copage.core.keywords import KeywordExtractor
from copage.core.registry import Registry
from copage.eval.datasets.probes import Dataset
from copage.eval.experiments.common import mean, sample_probes
from copage.eval.experiments.interface import BenchContext
from copage.eval.simulation import Cell, simulate

__all__ = ["COPAGE_POLICIES", "PAPER_BOUNDARIES", "PAPER_POLICIES", "breakdown", "capped",
           "cells_for", "datasets_of", "fixed_cell", "for_dataset", "group_key", "mean",
           "probe_outcomes", "run_grid", "study", "workers"]

PAPER_POLICIES: tuple[str, ...] = ("fifo", "lru", "lfu", "belady")
"""The policies the paper averages over (Tables 7-8, 10)."""

COPAGE_POLICIES: tuple[str, ...] = ("lrfu", "adaptive", "query")
"""copage's own policies: reported beside the paper's, never inside its averages."""

PAPER_BOUNDARIES: tuple[str, ...] = ("fixed_5", "fixed_10", "fixed_20", "topic_shift")


def capped(dataset: Dataset, probes: int | None, seed: int) -> Dataset:
    """``dataset`` with at most ``probes`` probes (a seeded sample, the same as ``main``'s)."""
    if probes is None or probes >= dataset.probes:
        return dataset
    keep = {p.id for _, p in sample_probes(dataset, probes, seed)}
    convs = tuple(replace(c, probes=tuple(p for p in c.probes if p.id in keep))
                  for c in dataset.conversations)
    return replace(dataset, conversations=convs)


def datasets_of(ctx: BenchContext) -> list[Dataset]:
    """The context's datasets with the probe cap applied."""
    return [capped(d, ctx.probes, ctx.seed) for d in ctx.datasets]


def workers(ctx: BenchContext) -> int:
    """Worker processes for the grid (``options["workers"]``, default: CPUs, at most 4)."""
    n = ctx.options.get("workers")
    return max(1, int(n)) if n is not None else min(4, os.cpu_count() or 1)


_worker_extractors: Registry[KeywordExtractor] | None = None
"""Set in grid worker processes only (:func:`_start_worker`): their cells' extractors."""


def _start_worker(extractors: Registry[KeywordExtractor] | None) -> None:
    """A forked worker's start: keep the run's extractors (handed over by the fork, not
    pickled: they may hold a model)."""
    global _worker_extractors
    _worker_extractors = extractors


def _simulate(args: tuple[Dataset, list[Cell]]) -> list[dict[str, Any]]:
    return simulate(*args, extractors=_worker_extractors)


def run_grid(dataset: Dataset, cells: Sequence[Cell], n_workers: int = 1,
             extractors: Registry[KeywordExtractor] | None = None) -> list[dict[str, Any]]:
    """``simulate(dataset, cells)`` in parallel by boundary; rows in the order of ``cells``.

    ``extractors``: where the cells' keywords are looked up (default: the global registry)."""
    groups: dict[tuple[str, ...], list[Cell]] = {}
    few = len({c.boundary for c in cells}) < n_workers  # then split by keywords too
    for c in cells:
        groups.setdefault((c.boundary, c.keywords) if few else (c.boundary,), []).append(c)
    parts = [(dataset, g) for g in groups.values()]
    if n_workers > 1 and len(parts) > 1:
        with ProcessPoolExecutor(min(n_workers, len(parts)), mp_context=get_context("fork"),
                                 initializer=_start_worker, initargs=(extractors,)) as ex:
            results = list(ex.map(_simulate, parts))
    else:
        results = [simulate(*p, extractors=extractors) for p in parts]
    by_cell = {}
    for (_, group), rows in zip(parts, results, strict=True):
        by_cell.update({c: r for c, r in zip(group, rows, strict=True)})
    return [by_cell[c] for c in cells]


def cells_for(ctx: BenchContext, *, boundary: Sequence[str] | None = None,
              policy: Sequence[str] | None = None, k: Sequence[int] | None = None,
              keywords: Sequence[str] | None = None, fmt: Sequence[str] | None = None) -> list[Cell]:
    """Cells of the context's paging settings, with any axis overridden."""
    p = ctx.paging
    return [Cell(b, pol, kk, kw, f, p.placement, p.order, ctx.seed)
            for b in (boundary or p.boundary) for pol in (policy or p.policy)
            for kk in (k or p.k) for kw in (keywords or p.keywords) for f in (fmt or p.format)]


def fixed_cell(ctx: BenchContext, *, boundary: str = "fixed_10", policy: str = "lru",
               keywords: str | None = None, fmt: str | None = None) -> Cell:
    """The one-setting cell of the format/generator studies (fixed_10 + LRU, k=5 by default).

    A non-default ``--boundary``/``--policy``/``-k`` replaces the default by its first value.
    """
    from copage.eval.experiments.interface import PagingSettings

    d, p = PagingSettings(), ctx.paging
    b = p.boundary[0] if tuple(p.boundary) != tuple(d.boundary) else boundary
    pol = p.policy[0] if tuple(p.policy) != tuple(d.policy) else policy
    return Cell(b, pol, int(p.k[0]) if p.k else 5, keywords or p.keywords[0], fmt or p.format[0],
                p.placement, p.order, ctx.seed)


def probe_outcomes(dataset: Dataset, cell: Cell) -> list[dict[str, Any]]:
    """Per probe under ``cell``: hit, routing credit, fact type and category (one simulation)."""
    from copage.eval.simulation import run_conversation

    memo: dict[tuple[Any, ...], Any] = {}
    out: list[dict[str, Any]] = []
    for conv in dataset.conversations:
        probes = {p.id: p for p in conv.probes}
        for o in run_conversation(conv, cell, memo).outcomes:
            p = probes[o.probe_id]
            out.append({"dataset": dataset.name, "conversation": conv.id, "probe": o.probe_id,
                        "fact_type": p.fact_type, "category": p.category, "hit": o.hit,
                        "routing": o.routing, "chance": o.chance})
    return out


def group_key(row: dict[str, Any]) -> str:
    """The breakdown key of a probe: its fact type (synthetic) or ``cat<id> <name>`` (LoCoMo)."""
    if row.get("fact_type"):
        return str(row["fact_type"])
    from copage.eval.scoring import category_label

    return str(category_label(int(row["category"])))


def breakdown(rows: Sequence[dict[str, Any]], extra: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Per dataset (x ``extra`` keys) x fact type: probes, faults, routing_top1 on faults."""
    out: list[dict[str, Any]] = []
    keys = dict.fromkeys((r["dataset"], *(r[e] for e in extra), group_key(r)) for r in rows)
    for key in keys:
        sel = [r for r in rows if (r["dataset"], *(r[e] for e in extra), group_key(r)) == key]
        faults = [r for r in sel if not r["hit"]]
        row = {"dataset": key[0], **dict(zip(extra, key[1:-1], strict=True)), "type": key[-1],
               "probes": len(sel), "faults": len(faults),
               "fault_rate": len(faults) / len(sel) if sel else None,
               "routing_top1": mean(r["routing"] for r in faults),
               "routing_chance": mean(r["chance"] for r in faults)}
        out.append(row)
    return out


def for_dataset(ctx: BenchContext, dataset: Dataset, cell: Cell) -> Cell:
    """``cell`` for ``dataset``: on ``controlled`` (no ``--boundary``/``-k`` given), fixed_5 with
    2 resident pages, the paper's section 4 setting (early pages compressed to 3-5 bookmarks),
    as ``main`` uses; at fixed_10 + k=5 its 20-35 turns would never fault."""
    from copage.eval.experiments.interface import PagingSettings

    d, p = PagingSettings(), ctx.paging
    if dataset.name != "controlled" or tuple(p.boundary) != tuple(d.boundary) or tuple(p.k) != tuple(d.k):
        return cell
    return replace(cell, boundary="fixed_5", k=2)


def study(ctx: BenchContext, name: str, cells: Sequence[Cell], *,
          datasets: Sequence[Dataset] | None = None,
          extractors: Registry[KeywordExtractor] | None = None,
          ) -> tuple[list[dict[str, Any]], list[str]]:
    """LLM-free rows of ``cells`` on every dataset, and the model's rows when a model is set.

    Cells go through :func:`for_dataset`. A model row (accuracy, trigger rate, ...)
    carries the LLM-free columns of its cell; returns (rows, notes). ``extractors``:
    where the cells' keywords are looked up (default: the global registry).
    """
    dss = list(datasets) if datasets is not None else datasets_of(ctx)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    prog = ctx.progress
    bar = prog.start(name, len(dss)) if prog is not None else None
    for ds in dss:
        cs = list(dict.fromkeys(for_dataset(ctx, ds, c) for c in cells))
        free = [{**r, "model": None} for r in run_grid(ds, cs, workers(ctx), extractors)]
        rows += free
        if ctx.model is not None:
            from copage.eval.experiments.model_probe import CELL_KEYS, run_cells

            model_rows, mnotes = run_cells(ctx, name, [ds], cs, extractors=extractors)
            notes += [n for n in mnotes if n not in notes]
            by_cell = {tuple(r[k] for k in CELL_KEYS): r for r in free}
            rows += [{**by_cell.get(tuple(m[k] for k in CELL_KEYS), {}), **m} for m in model_rows]
        if prog is not None and bar is not None:
            prog.advance(bar)
    if prog is not None and bar is not None:
        prog.finish(bar)
    return [{k: v for k, v in r.items() if k != "probes_skipped"} for r in rows], notes
