"""Choosing the speculative fill's threshold for messages that ask something.

The fill's trigger (``copage.session.speculate``) compares the best evicted page's
normalised BM25 score with ``threshold`` (0.35), and, for a message its question rule
holds for (``QUESTION_RULES``: ``asks``, any question; ``asks_back``, a first-person
question), with the question threshold (``threshold`` x ``question_factor``); with
``whole``, such a question sees every evicted page when they all fit. A candidate is a
rule, ``whole`` or not, and a question threshold; for each:

* **synthetic coverage at the budget**: ``bookmark_recall+copage`` (library defaults,
  ``speculative``) on the ``controlled`` and ``ablation`` presets generated with the
  tuning seeds and, separately, with the held-out seeds (never used for choosing);
  ``bm25`` beside it;
* **LoCoMo coverage at the budget**, per conversation, with ``bm25`` per conversation
  and the probes over the budget;
* **the chat**: the first ``--turns`` turns of each LoCoMo conversation through
  ``PagedChat`` (``bench_prompt_cache.replay_chat``): median prefix share, turns with a
  fill, input cost with caching at gpt-4o-mini's prices, paged / full context.

Selection, leave one LoCoMo conversation out: of the candidates that, on each of the
other four conversations, cover at least ``bm25``'s share at the budget with no probe
over it, keep a median share >= 0.9 and cost less than cached full context at the
``--constrain`` models' prices (default gpt-4o-mini), the one with the best synthetic
coverage on the tuning seeds (ties: the higher threshold, then without ``whole``, then
``asks_back``); reported on the held-out conversation and on the held-out seeds.
``--jsonl`` keeps every measurement (resumable).

Run::

    PYTHONPATH=src python bench/bench_trigger.py ../shared/data/locomo/locomo-sample.json \\
        ../shared/data/locomo/locomo-more.json --rule asks,asks_back --whole 0,1 \\
        --jsonl trigger.jsonl
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_prompt_cache import replay_chat

from copage.eval.datasets import Dataset
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

speculate_module = importlib.import_module("copage.session.speculate")  # the package exports a function of that name

MODEL = "gpt-4o-mini"
CONSTRAINED = [MODEL]
"""Models whose paged cost with caching must be below full context's (``--constrain``)."""
SYNTHETIC = ("controlled", "ablation")


def covered(ds: Dataset, method: Method, budget: int) -> dict[str, tuple[int, int, int]]:
    """Per conversation: probes whose evidence is all shown, probes, probes over budget."""
    ctx = BenchContext(datasets=[ds], out=Path("."), seed=0, model=None, model_spec=None,
                       judges={}, probes=None, methods=None, paging=PagingSettings(),
                       progress=None, options={"budget": budget})  # type: ignore[arg-type]
    settings = settings_for(ds, ctx)
    out = {}
    for conv in ds.conversations:
        prep = method.prepare(conv, settings)
        hits = n = over = 0
        for probe in conv.probes:
            built = prep.build(probe, "never") if isinstance(method, BookmarkMethod) else prep.build(probe)
            c = coverage(evidence_groups(conv, probe, acknowledgements=is_synthetic(ds)),
                         built.context_turn_ids)
            hits, n, over = hits + c.all, n + 1, over + (built.prompt_tokens > budget)
        out[conv.id] = (hits, n, over)
    return out


def copage_method() -> BookmarkMethod:
    return BookmarkMethod("speculative", "speculative", Variant.of_mode("speculative", copage=True))


def measure(cand: tuple[float, str, bool] | None, files: list[str], seeds: list[int],
            budget: int, turns: int) -> list[dict[str, Any]]:
    """Rows of one candidate (question threshold, rule, whole; None: bm25)."""
    if cand is not None:
        qt, rule, whole = cand
        speculate_module.DEFAULT_QUESTION_FACTOR = qt / speculate_module.DEFAULT_THRESHOLD
        speculate_module.DEFAULT_QUESTION_RULE = rule
        speculate_module.DEFAULT_WHOLE = whole
    method: Method = get_method("bm25") if cand is None else copage_method()
    name = name_of(cand)
    rows: list[dict[str, Any]] = []
    for preset in SYNTHETIC:
        for seed in seeds:
            got = covered(load_bench_dataset(preset, seed=seed), method, budget)
            rows.append({"cand": name, "kind": "synthetic", "set": preset, "seed": seed,
                         "hits": sum(h for h, _, _ in got.values()),
                         "n": sum(n for _, n, _ in got.values())})
    for f in files:
        ds = load_bench_dataset(f, seed=0)
        got = covered(ds, method, budget)
        for conv in ds.conversations:
            h, n, over = got[conv.id]
            row: dict[str, Any] = {"cand": name, "kind": "locomo", "conv": conv.id, "hits": h,
                                   "n": n, "over": over}
            if cand is not None:
                pc, _, filled = replay_chat(conv.turns, turns, {}, "speculative")
                cost = pc["cost_usd"][MODEL]
                row |= {"share": pc["prefix_share_median"], "fills": filled,
                        "paged": cost["paged_cached"], "full": cost["full_cached"],
                        "cost": pc["cost_usd"]}
            rows.append(row)
    return rows


def name_of(cand: tuple[float, str, bool] | None) -> str:
    if cand is None:
        return "bm25"
    qt, rule, whole = cand
    return f"{rule}{'+whole' if whole else ''} {qt:.2f}"


def order(name: str) -> tuple[float, int, int]:
    """Tie order of candidates (the smaller first): the higher threshold, no whole, asks_back."""
    rule, qt = name.split()
    return (-float(qt), "+whole" in rule, not rule.startswith("asks_back"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="+", help="LoCoMo files")
    ap.add_argument("--question-threshold", default="0.35,0.3,0.25,0.2,0.15")
    ap.add_argument("--rule", default=speculate_module.DEFAULT_QUESTION_RULE,
                    help="question rules, comma-separated (speculate.QUESTION_RULES)")
    ap.add_argument("--whole", default="0", help="0, 1 or 0,1")
    ap.add_argument("--tuning-seeds", default="0,1,2,3,4")
    ap.add_argument("--held-out-seeds", default="100,101,102,103,104")
    ap.add_argument("--budget", type=int, default=2048)
    ap.add_argument("--turns", type=int, default=300)
    ap.add_argument("--constrain", default=MODEL, help="comma-separated models (see CONSTRAINED)")
    ap.add_argument("--report", action="store_true", help="only report what --jsonl holds")
    ap.add_argument("--jsonl", default="")
    args = ap.parse_args()
    CONSTRAINED[:] = args.constrain.split(",")
    tuning = [int(x) for x in args.tuning_seeds.split(",")]
    held = [int(x) for x in args.held_out_seeds.split(",")]
    rows: list[dict[str, Any]] = []
    if args.jsonl and Path(args.jsonl).exists():
        rows = [json.loads(line) for line in Path(args.jsonl).read_text().splitlines() if line]
    done = {r["cand"] for r in rows}
    cands: list[tuple[float, str, bool] | None] = [None, *(
        (float(q), r, bool(int(w))) for r in args.rule.split(",") for w in args.whole.split(",")
        for q in args.question_threshold.split(","))]
    with open(args.jsonl or "/dev/null", "a") as out:
        for cand in [] if args.report else cands:
            if name_of(cand) in done:
                continue
            new = measure(cand, args.files, tuning + held, args.budget, args.turns)
            rows += new
            out.writelines(json.dumps(r) + "\n" for r in new)
            out.flush()
    names = sorted({r["cand"] for r in rows} - {"bm25"}, key=order)
    report(rows, names, tuning, held)


def _share(rows: list[dict[str, Any]]) -> float:
    return sum(r["hits"] for r in rows) / max(1, sum(r["n"] for r in rows))


def report(rows: list[dict[str, Any]], names: list[str], tuning: list[int],
           held: list[int]) -> None:
    loc = {(r["cand"], r["conv"]): r for r in rows if r["kind"] == "locomo"}
    convs = sorted({r["conv"] for r in rows if r["kind"] == "locomo"})

    def synth(name: str, seeds: list[int], preset: str | None = None) -> float:
        return _share([r for r in rows if r["kind"] == "synthetic" and r["cand"] == name
                       and r["seed"] in seeds and preset in (None, r["set"])])

    def ok(name: str, conv: str) -> bool:
        r, b = loc[(name, conv)], loc[("bm25", conv)]
        costs = r.get("cost", {MODEL: {"paged_cached": r["paged"], "full_cached": r["full"]}})
        return (r["hits"] / r["n"] >= b["hits"] / b["n"] and r["over"] == 0
                and r["share"] >= 0.9
                and all(costs[m]["paged_cached"] < costs[m]["full_cached"] for m in CONSTRAINED))

    def best(fit: list[str]) -> str:
        top = max(synth(n, tuning) for n in fit)
        return min((n for n in fit if synth(n, tuning) == top), key=order)

    print(f"candidate (rule, question threshold): synthetic coverage at the budget, controlled "
          f"ablation, tuning seeds {tuning} / held-out seeds {held}; LoCoMo coverage (pooled), "
          f"probes over budget; chat: median share (lowest conversation), fills, {MODEL} USD "
          f"paged / full (sums); conversations meeting every constraint")
    for name in ["bm25", *names]:
        s = (f"{synth(name, tuning, 'controlled'):.3f} {synth(name, tuning, 'ablation'):.3f} / "
             f"{synth(name, held, 'controlled'):.3f} {synth(name, held, 'ablation'):.3f}")
        lr = [loc[(name, c)] for c in convs]
        line = f"{name:20s} {s}  locomo {_share(lr):.3f}, {sum(r['over'] for r in lr)} over"
        if name != "bm25":
            line += (f"  chat {statistics.median(r['share'] for r in lr):.3f} "
                     f"({min(r['share'] for r in lr):.3f}), {sum(r['fills'] for r in lr)} fills, "
                     f"{sum(r['paged'] for r in lr):.4f} / {sum(r['full'] for r in lr):.4f}"
                     f"  {sum(ok(name, c) for c in convs)}/{len(convs)}")
        print(line)
    print("leave one conversation out (chosen on the other four and the tuning seeds):")
    for held_conv in convs:
        fit = [n for n in names if all(ok(n, c) for c in convs if c != held_conv)]
        if not fit:
            print(f"  {held_conv}: nothing meets the constraints")
            continue
        name = best(fit)
        r, b = loc[(name, held_conv)], loc[("bm25", held_conv)]
        print(f"  {held_conv}: chosen {name}; held out: coverage {r['hits'] / r['n']:.3f} "
              f"(bm25 {b['hits'] / b['n']:.3f}), {r['over']} over, share {r['share']:.3f}, "
              f"{r['fills']} fills, {MODEL} {r['paged']:.4f} / {r['full']:.4f}"
              f"{'' if ok(name, held_conv) else '  (misses a constraint)'}")
    fit = [n for n in names if all(ok(n, c) for c in convs)]
    if fit:
        name = best(fit)
        print(f"chosen on all five: {name}; held-out seeds: controlled "
              f"{synth(name, held, 'controlled'):.3f}, ablation {synth(name, held, 'ablation'):.3f}"
              f" (bm25 {synth('bm25', held, 'controlled'):.3f}, "
              f"{synth('bm25', held, 'ablation'):.3f})")


if __name__ == "__main__":
    main()
