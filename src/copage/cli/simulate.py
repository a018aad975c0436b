"""``copage simulate``: the LLM-free paging simulation over a grid of settings."""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from typing import Any

from copage.core.bookmarks import FORMATS
from copage.core.boundaries import BOUNDARIES
from copage.core.keywords import EXTRACTORS
from copage.core.policies import POLICIES

DEFAULT_DATASET = "ablation"
DEFAULT_BOUNDARIES = "fixed_5,fixed_10,fixed_20,topic_shift,segment"
DEFAULT_POLICIES = "fifo,lru,lfu,belady,lrfu,adaptive,query"
DEFAULT_K = "5"
DEFAULT_KEYWORDS = "heuristic"
DEFAULT_FORMAT = "minimal"


def _list(text: str) -> list[str]:
    """The comma-separated items of ``text`` (blank items dropped; may be empty)."""
    return [x.strip() for x in text.split(",") if x.strip()]


def _names(text: str, option: str) -> list[str]:
    """The comma-separated values of ``option``: at least one, else a clear error."""
    names = _list(text)
    if not names:
        raise ValueError(f"{option} needs at least one value, got {text!r}")
    return names


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "simulate", help="LLM-free paging simulation (hit rates, Belady gap, routing)",
        description="Replay conversations with probes through the pager for a grid of "
        "settings (comma-separated lists). See docs/simulation.md for the definitions.",
    )
    p.add_argument("dataset", nargs="?", default=DEFAULT_DATASET,
                   help=f"LoCoMo-format file or built-in preset (default: {DEFAULT_DATASET})")
    p.add_argument("--boundary", default=DEFAULT_BOUNDARIES, help=f"default: {DEFAULT_BOUNDARIES}")
    p.add_argument("--policy", default=DEFAULT_POLICIES, help=f"default: {DEFAULT_POLICIES}")
    p.add_argument("-k", default=DEFAULT_K, help=f"resident pages (default: {DEFAULT_K})")
    p.add_argument("--keywords", default=DEFAULT_KEYWORDS, help=f"default: {DEFAULT_KEYWORDS}")
    p.add_argument("--format", default=DEFAULT_FORMAT, help=f"default: {DEFAULT_FORMAT}")
    p.add_argument("--placement", default="end", choices=["end", "interleaved"],
                   help="default: end")
    p.add_argument("--order", default="shuffled", choices=["shuffled", "file"],
                   help="probe order (default: shuffled, seeded)")
    p.add_argument("--seed", type=int, default=0, help="default: 0")
    p.add_argument("--json", action="store_true", help="print only JSON on stdout")


def cells_from_args(args: argparse.Namespace) -> list[Any]:
    """The grid; every name is checked before anything runs."""
    from copage.eval.simulation import Cell

    boundaries = [BOUNDARIES.check(b) for b in _names(args.boundary, "--boundary")]
    policies = [POLICIES.check(p) for p in _names(args.policy, "--policy")]
    keywords = [EXTRACTORS.check(k) for k in _names(args.keywords, "--keywords")]
    formats = [FORMATS.check(f) for f in _names(args.format, "--format")]
    ks = []
    for k in _names(args.k, "-k"):
        if not k.isdigit() or int(k) < 1:
            raise ValueError(f"-k takes positive integers, got {k!r}")
        ks.append(int(k))
    for b in boundaries:  # parametrised names (fixed_0, tokens_x) fail here, early
        BOUNDARIES.create(b)
    return [
        Cell(b, p, k, kw, f, args.placement, args.order, args.seed)
        for b, p, k, kw, f in itertools.product(boundaries, policies, ks, keywords, formats)
    ]


def run(args: argparse.Namespace) -> int:
    from copage.eval.datasets import load_dataset
    from copage.eval.simulation import simulate

    cells = cells_from_args(args)
    dataset = load_dataset(args.dataset, seed=args.seed)
    t0 = time.perf_counter()
    rows = simulate(dataset, cells)
    elapsed = time.perf_counter() - t0
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    print_table(rows)
    skipped = dict(dataset.probes_skipped)
    repairs = dict(dataset.repairs)
    print(f"\ndataset {dataset.name}: {len(dataset.conversations)} conversations, "
          f"{dataset.probes} probes, skipped {_counts(skipped)}, repaired {_counts(repairs)}; "
          f"tokenizer {rows[0]['tokenizer']}; {len(rows)} cells in {elapsed:.1f} s")
    return 0


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) if counts else "none"


COLUMNS = [("boundary", "{}"), ("policy", "{}"), ("k", "{}"), ("keywords", "{}"), ("format", "{}"),
           ("pages_mean", "{:.1f}"), ("hit_rate", "{:.3f}"), ("belady_hit_rate", "{:.3f}"),
           ("routing_top1", "{:.3f}"), ("routing_chance", "{:.3f}"),
           ("bookmark_tokens_mean", "{:.1f}"), ("prompt_tokens_mean", "{:.0f}"),
           ("full_tokens_mean", "{:.0f}")]


def print_table(rows: list[dict[str, Any]]) -> None:
    """A plain aligned table, one row per cell."""
    head = [c for c, _ in COLUMNS]
    body = [[("-" if r[c] is None else f.format(r[c])) for c, f in COLUMNS] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    print("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    for b in body:
        print("  ".join(v.ljust(w) for v, w in zip(b, widths, strict=True)))
