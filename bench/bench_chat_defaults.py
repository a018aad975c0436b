"""Choosing PagedChat's default paging and fill settings for cost with caching priced in.

For each setting of the grid (resident pages ``k``, eviction batch ``b``, the fill's
allowance ``t`` = ``speculative_tokens`` and threshold ``th``) and each LoCoMo
conversation of the given files:

* **cost**: the first ``--turns`` turns sent through ``PagedChat`` in the default
  ``speculative`` mode (a scripted model answers with the conversation's next turn,
  as ``bench/bench_prompt_cache.py --mode speculative``); ``stats().prompt_cache``:
  the median share of each request repeating the previous request's prefix, and the
  input cost with caching priced in, paged and full context, for every model of
  ``copage.core.promptcache.PRICES``;
* **coverage at the chat's settings**: the whole conversation in a ``PagedMemory``
  with these settings; for every probe, what ``PagedChat`` would send for its
  question (resident pages, open page, and the fill the speculator plans within
  ``t`` at ``th``) and whether it shows all of the probe's evidence turns (LLM-free;
  no budget: the chat's settings decide the size).

Selection, leave one conversation out: on the other conversations, the settings
whose every conversation keeps the median share >= 0.9 and costs less than full
context with caching at the ``--constrain`` models' prices (default gpt-4o-mini and
claude-haiku-4-5), and among those with a mean coverage within 0.01 of the best, the
cheapest at claude-haiku-4-5's prices; reported on the held-out conversation. ``--jsonl`` keeps every measurement (resumable).

Run::

    PYTHONPATH=src python bench/bench_chat_defaults.py ../shared/data/locomo/locomo-sample.json \\
        ../shared/data/locomo/locomo-more.json --jsonl chat_defaults.jsonl
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_prompt_cache import replay_chat

from copage import PagedMemory
from copage.core.types import page_index
from copage.eval.datasets import Conversation, load_dataset
from copage.eval.methods import coverage
from copage.session.speculate import Speculator

CONSTRAINED = ["gpt-4o-mini", "claude-haiku-4-5"]
CHEAPEST = "claude-haiku-4-5"
"""The settings are ranked by their cost at this model's prices (the dearest for paging)."""
TOLERANCE = 0.01
"""Coverage this close to the best counts as equal (about 2 of a conversation's ~200 probes)."""


def chat_coverage(conv: Conversation, k: int, b: int, t: int, th: float,
                  rel: float = 0.0) -> tuple[float, int]:
    """Share of the probes whose evidence the chat's request shows, and the probes."""
    mem = PagedMemory(resident_pages=k, evict_batch=b)
    first = conv.turns[0].speaker or conv.turns[0].role
    for turn in conv.turns:
        mem.add("user" if (turn.speaker or turn.role) == first else "assistant", turn.text,
                speaker=turn.speaker, timestamp=turn.timestamp, session=turn.session)
    pager = mem.pager  # a bench reads the state; the chat's own steps take the view
    where = {id(turn): conv.turns[i].id for i, turn in enumerate(pager.turns)}
    shown = {where[id(x)] for pid in pager.resident
             for x in pager.pages[page_index(pid)].turns}
    shown |= {where[id(x)] for x in pager.open_turns}
    spec = Speculator(th, tokens=t, relative=rel)
    hits = n = 0
    for probe in conv.probes:
        if not probe.evidence:
            continue
        fill = spec.plan(pager, probe.question)
        seen = shown | {where[id(x)] for pid in fill.paged_in
                        for x in pager.pages[page_index(pid)].turns}
        hits += coverage(probe, seen).all
        n += 1
    return hits / max(n, 1), n


def measure(conv: Conversation, turns: int, k: int, b: int, t: int, th: float,
            rel: float = 0.0) -> dict[str, Any]:
    pc, _, filled = replay_chat(conv.turns, turns, {"resident_pages": k, "evict_batch": b},
                                "speculative", {"speculative_tokens": t,
                                                "speculative_threshold": th,
                                                "speculative_relative": rel})
    cov, n = chat_coverage(conv, k, b, t, th, rel)
    return {"conv": conv.id, "k": k, "b": b, "t": t, "th": th, "rel": rel, "filled": filled,
            "share": pc["prefix_share_median"], "cost": pc["cost_usd"], "coverage": cov,
            "probes": n}


def ok(row: dict[str, Any]) -> bool:
    return row["share"] >= 0.9 and all(
        row["cost"][m]["paged_cached"] < row["cost"][m]["full_cached"] for m in CONSTRAINED)


def key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["k"], row["b"], row["t"], row["th"], row.get("rel", 0.0))


def select(rows: Sequence[dict[str, Any]], convs: Sequence[str]) -> tuple[Any, ...] | None:
    """Of the settings meeting the constraints on every conversation of ``convs``, the
    cheapest at :data:`CHEAPEST`'s prices among those whose mean coverage is within
    :data:`TOLERANCE` of the best."""
    by: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in rows:
        if r["conv"] in convs:
            by.setdefault(key(r), []).append(r)
    good = {s: (statistics.fmean(r["coverage"] for r in rs),
                statistics.fmean(r["cost"][CHEAPEST]["paged_cached"] for r in rs))
            for s, rs in by.items() if len(rs) == len(convs) and all(ok(r) for r in rs)}
    if not good:
        return None
    best = max(c for c, _ in good.values())
    return min((cost, s) for s, (c, cost) in good.items() if c >= best - TOLERANCE)[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--turns", type=int, default=300)
    ap.add_argument("--k", default="2,3,4,5")
    ap.add_argument("--batch", default="1,2,max", help="eviction batches; max: k - 1")
    ap.add_argument("--tokens", default="256,512,1024")
    ap.add_argument("--threshold", default="0.35,0.5")
    ap.add_argument("--relative", default="0", help="speculative_relative values")
    ap.add_argument("--constrain", default=",".join(CONSTRAINED),
                    help="models whose paged cost must be below full context's")
    ap.add_argument("--report", action="store_true", help="only select and report (no runs)")
    ap.add_argument("--jsonl", default="")
    args = ap.parse_args()
    CONSTRAINED[:] = args.constrain.split(",")
    convs = [c for f in args.files for c in load_dataset(f, seed=0).conversations]
    rows: list[dict[str, Any]] = []
    done: set[tuple[Any, ...]] = set()
    if args.jsonl and Path(args.jsonl).exists():
        rows = [json.loads(line) for line in Path(args.jsonl).read_text().splitlines() if line]
        done = {(r["conv"], *key(r)) for r in rows}
    out = open(args.jsonl, "a") if args.jsonl else None  # noqa: SIM115
    grid = []
    for k in (int(x) for x in args.k.split(",")):
        batches = sorted({max(1, k - 1) if x == "max" else min(int(x), max(1, k - 1))
                          for x in args.batch.split(",")})
        grid += itertools.product([k], batches, [int(x) for x in args.tokens.split(",")],
                                  [float(x) for x in args.threshold.split(",")],
                                  [float(x) for x in args.relative.split(",")])
    for conv in [] if args.report else convs:
        for k, b, t, th, rel in grid:
            if (conv.id, k, b, t, th, rel) in done:
                continue
            row = measure(conv, args.turns, k, b, t, th, rel)
            rows.append(row)
            if out:
                out.write(json.dumps(row) + "\n")
                out.flush()
    ids = [c.id for c in convs]
    print("leave one conversation out: settings (k, batch, tokens, threshold, relative) chosen on the "
          "others, figures on the held-out one")
    print(f"{'held out':10s} {'chosen':22s} {'share':>5s} {'cov':>5s}  USD paged / full, cached: "
          + ", ".join(m for m in rows[0]["cost"]))
    means: list[list[float]] = []
    for held in ids:
        chosen = select(rows, [c for c in ids if c != held])
        if chosen is None:
            print(f"{held:10s} nothing meets the constraints")
            continue
        r = next(r for r in rows if r["conv"] == held and key(r) == chosen)
        costs = ", ".join(f"{c['paged_cached']:.4f} / {c['full_cached']:.4f}"
                          for c in r["cost"].values())
        print(f"{held:10s} {chosen!s:22s} {r['share']:5.3f} {r['coverage']:5.3f}  {costs}"
              f"{'' if ok(r) else '  (misses a constraint)'}")
        means.append([r["share"], r["coverage"], *(c[x] for c in r["cost"].values()
                                                   for x in ("paged_cached", "full_cached"))])
    if means:
        m = [statistics.fmean(col) for col in zip(*means, strict=True)]
        pairs = ", ".join(f"{m[2 + 2 * i]:.4f} / {m[3 + 2 * i]:.4f}" for i in range((len(m) - 2) // 2))
        print(f"{'mean':10s} {'':22s} {m[0]:5.3f} {m[1]:5.3f}  {pairs}")
    final = select(rows, ids)
    print(f"chosen on all five: {final}")
    for held in ids:
        for r in rows:
            if r["conv"] == held and key(r) in {final, (5, 2, 1024, 0.35, 0.0)}:
                print("  ", json.dumps({k: r[k] for k in ("conv", "k", "b", "t", "th", "share",
                                                          "coverage", "filled")}),
                      {m: (round(c["paged_cached"], 4), round(c["full_cached"], 4))
                       for m, c in r["cost"].items()})


if __name__ == "__main__":
    main()
