"""LLM-free evidence coverage of copage's defaults in each recall mode, at one billed budget.

Every mode runs with the library's ``PagerConfig()`` (as ``bookmark_recall+copage``),
planned by the benchmark's budget plan (``docs/benchmark-methods.md``) and read by its
reference readers, beside ``bm25``: coverage all / any, mean billed tokens, probes over
the budget and probes that do not fit, per trigger. ``--plan-recall 0`` plans the
modes with the tool for one answer call (a probe whose recall exceeds the budget
then does not fit). Used to choose ``PagedChat``'s default recall mode (``docs/loop.md``).

Run::

    PYTHONPATH=src python bench/bench_default_mode.py ../shared/data/locomo/locomo-sample.json \\
        ../shared/data/locomo/locomo-more.json ablation controlled --budget 2048
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from copage.eval.experiments.common import load_bench_dataset, settings_for
from copage.eval.experiments.interface import BenchContext, PagingSettings
from copage.eval.experiments.methods_table import is_synthetic
from copage.eval.methods import (
    BookmarkMethod,
    Method,
    Variant,
    coverage,
    evidence_groups,
    get_method,
)

MODES = ("tool", "speculative+tool", "speculative")


def measure(spec: str, method: Method, budget: int, triggers: tuple[str | None, ...],
            **changes: Any) -> list[str]:
    ds = load_bench_dataset(spec, seed=0)
    ctx = BenchContext(datasets=[ds], out=Path("."), seed=0, model=None, model_spec=None,
                       judges={}, probes=None, methods=None, paging=PagingSettings(),
                       progress=None, options={"budget": budget})  # type: ignore[arg-type]
    settings = replace(settings_for(ds, ctx), **changes)
    preps = {c.id: method.prepare(c, settings) for c in ds.conversations}
    out = []
    for trigger in triggers:
        n = all_ = any_ = tokens = over = dnf = 0
        for conv in ds.conversations:
            for probe in conv.probes:
                prep = preps[conv.id]
                built = prep.build(probe, trigger) if trigger else prep.build(probe)
                c = coverage(evidence_groups(conv, probe, acknowledgements=is_synthetic(ds)),
                             built.context_turn_ids)
                n, all_, any_ = n + 1, all_ + c.all, any_ + c.any
                tokens += built.prompt_tokens
                over += built.prompt_tokens > budget
                dnf += bool(built.limit and built.limit.startswith("does not fit"))
        out.append(f"{trigger or '-'}: {all_ / n:.3f} / {any_ / n:.3f}, {tokens / n:,.0f} tokens, "
                   f"{over} over, {dnf} do not fit (n={n})")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("datasets", nargs="+", help="LoCoMo files or synthetic presets")
    ap.add_argument("--budget", type=int, default=2048)
    ap.add_argument("--plan-recall", type=int, default=1, choices=[0, 1])
    ap.add_argument("--threshold", type=float, default=None, help="speculative_threshold")
    args = ap.parse_args()
    changes: dict[str, Any] = {"plan_recall": bool(args.plan_recall)}
    if args.threshold is not None:
        changes["speculative_threshold"] = args.threshold
    for spec in args.datasets:
        name = Path(spec).stem
        for line in measure(spec, get_method("bm25"), args.budget, (None,)):
            print(f"{name:14s} {'bm25':18s} {line}", flush=True)
        for mode in MODES:
            method = BookmarkMethod(mode, mode, Variant.of_mode(mode, copage=True))
            for line in measure(spec, method, args.budget, ("never", "rule"), **changes):
                print(f"{name:14s} {mode:18s} {line}", flush=True)


if __name__ == "__main__":
    main()
