"""Facts asked in other words: how many reach the model at copage's defaults.

For each fact of the paraphrase set (``copage.eval.paraphrase``), a chat is built
from real conversation (LoCoMo files the user gives, the two speakers of each
conversation as user and assistant, conversations one after the other and wrapped
around for the long chats): a few turns, the fact's statement (and a short
acknowledgement), ``N`` turns, then the fact's question in other words. The chat is
replayed through ``PagedChat(PagedMemory(), model)`` at the defaults, the model a
recording test double, and the request sent for the question is checked for the
statement (``resident``, ``filled``, ``words`` = proof words only, ``missing``).

Conditions: ``short`` (statement at turn 5, question at turn 41), ``300`` and
``2000`` (statement at turn 11, then that many turns, then the question). Each fact starts at its own
place in the turns (131 turns apart), the same in every run.

The ``final`` split is measured to report, never to choose anything (see the
module docstring of ``copage.eval.paraphrase``); ``--split dev`` while tuning.

``--dense`` adds the fill's meaning channel (docs/dense.md) to the defaults.

Run::

    PYTHONPATH=src python bench/bench_paraphrase.py ../shared/data/locomo/locomo-sample.json \\
        ../shared/data/locomo/locomo-more.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from copage.eval.datasets import load_dataset
from copage.eval.paraphrase import (
    FACTS,
    STATUSES,
    Line,
    Reach,
    lines_of_conversations,
    run_fact,
    split,
    split_of,
    window,
)

CONDITIONS = {"short": (4, 34), "300": (10, 300), "2000": (10, 2000)}
"""Condition: turns before the statement, turns between it (and its reply) and the question."""
STRIDE = 131
"""Each fact's chat starts this many turns after the previous fact's."""


def run(lines: Sequence[Line], splits: Sequence[str], conditions: Sequence[str],
        chat_options: dict[str, Any] | None = None) -> list[Reach]:
    """Every fact of ``splits`` in every condition (in the set's order);
    ``chat_options``: PagedChat keywords (default: none, the defaults)."""
    out: list[Reach] = []
    for cond in conditions:
        pre, n = CONDITIONS[cond]
        for i, fact in enumerate(FACTS):
            name = split_of(fact)
            if name not in splits:
                continue
            start = i * STRIDE
            reach = run_fact(fact, window(lines, start, pre), window(lines, start + pre, n),
                             split_name=name, chat_options=chat_options)
            out.append(reach)
            print(json.dumps({"condition": cond, **_row(reach)}), file=sys.stderr)
    return out


def _row(r: Reach) -> dict[str, object]:
    return {"fact": r.fact, "split": r.split, "status": r.status, "turns": r.turns,
            "prompt_tokens": r.prompt_tokens, "evicted_pages": r.evicted_pages,
            "cost_usd": r.cost_usd}


def table(results: Sequence[Reach], conditions: Sequence[str], splits: Sequence[str]) -> str:
    """Reach per split and condition (markdown), then each fact's status per condition."""
    per = len(results) // max(1, len(conditions))
    by_cond = {c: results[k * per:(k + 1) * per] for k, c in enumerate(conditions)}
    head = "| split | condition | reached | " + " | ".join(STATUSES) + " | prompt tokens (mean) |"
    rows = [head, "|" + "---|" * (4 + len(STATUSES))]
    for s in splits:
        for c in conditions:
            rs = [r for r in by_cond[c] if r.split == s]
            if not rs:
                continue
            hit = sum(r.reached for r in rs)
            counts = " | ".join(str(sum(r.status == st for r in rs)) for st in STATUSES)
            mean = sum(r.prompt_tokens for r in rs) / len(rs)
            rows.append(f"| {s} | {c} | {hit}/{len(rs)} ({hit / len(rs):.0%}) | {counts} "
                        f"| {mean:.0f} |")
    rows += ["", ("Input cost of the chats as sent vs sending the whole conversation each "
                  "request, caching priced (USD, summed over the chats; `stats().savings`):"),
             "",
             "| condition | model | paged | full context | chats where paging saved |",
             "|---|---|---|---|---|"]
    for c in conditions:
        rs = by_cond[c]
        for model in rs[0].cost_usd if rs else ():
            paged = sum(r.cost_usd[model][0] for r in rs)
            full = sum(r.cost_usd[model][1] for r in rs)
            won = sum(r.cost_usd[model][0] < r.cost_usd[model][1] for r in rs)
            rows.append(f"| {c} | {model} | {paged:.4f} | {full:.4f} | {won}/{len(rs)} |")
    rows += ["", "| fact | split | " + " | ".join(conditions) + " |",
             "|" + "---|" * (2 + len(conditions))]
    for k, r in enumerate(by_cond[conditions[0]]):
        cells = " | ".join(by_cond[c][k].status for c in conditions)
        rows.append(f"| {r.fact} | {r.split} | {cells} |")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="+", help="LoCoMo-format JSON files (never committed)")
    ap.add_argument("--split", choices=["dev", "final", "all"], default="all")
    ap.add_argument("--conditions", default="short,300,2000",
                    help="comma-separated: " + ", ".join(CONDITIONS))
    ap.add_argument("--json", type=Path, help="also write every fact's result here")
    ap.add_argument("--dense", nargs="?", const="", metavar="MODEL_DIR",
                    help="add the dense channel (FillSettings(dense=copage.dense.ranker(...))); "
                         "MODEL_DIR: the model folder (default: where copage.dense finds it)")
    ap.add_argument("--dense-cache", type=Path, metavar="FILE",
                    help="embedding cache file for --dense (reused across runs)")
    args = ap.parse_args()
    conditions = [c for c in args.conditions.split(",") if c]
    bad = [c for c in conditions if c not in CONDITIONS]
    if bad:
        ap.error(f"unknown condition(s) {bad}; valid: {', '.join(CONDITIONS)}")
    splits = ["dev", "final"] if args.split == "all" else [args.split]
    convs = [c for f in args.files for c in load_dataset(f).conversations]
    lines = lines_of_conversations(convs)
    print(f"{len(FACTS)} facts ({len(split('dev'))} dev, {len(split('final'))} final); "
          f"{len(lines)} turns from {len(convs)} conversations", file=sys.stderr)
    t0 = time.perf_counter()
    options: dict[str, Any] | None = None
    if args.dense is not None:
        from copage import FillSettings
        from copage.dense import ranker
        options = {"fill": FillSettings(dense=ranker(args.dense or None, cache=args.dense_cache))}
    else:
        from copage import FillSettings
        channel = FillSettings().speculator().dense is not None
        print("copage's default meaning channel: " + ("on (its model's files are installed)"
              if channel else "off (COPAGE_DENSE=off, or no model: `copage dense fetch`)"),
              file=sys.stderr)
    results = run(lines, splits, conditions, options)
    print(table(results, conditions, splits))
    print(f"\n({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(
            [{"condition": conditions[k // max(1, len(results) // len(conditions))], **_row(r)}
             for k, r in enumerate(results)], indent=1))


if __name__ == "__main__":
    main()
