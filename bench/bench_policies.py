"""Eviction policies: replay throughput, and hit rates per phase on traces with phase changes.

Run:
    .venv/bin/python bench/bench_policies.py [--seed N] [--accesses N]   # throughput
    .venv/bin/python bench/bench_policies.py --phases [--seeds 0-2]      # adaptive per phase

Throughput: accesses/s per policy on a Zipf-like random trace, capacity 5.

Phases: four phases of ``--phase-len`` accesses each: frequency-friendly (k-2 hot pages
among one-time pages: LFU keeps the hot ones, LRU loses them to the scans), then
recency-friendly (a working set of k-1 pages sliding forward: LFU's old counts keep
stale pages), then both again with new pages. Per phase: the hit rate of LRU, LFU,
``adaptive`` (decayed evidence, the default half-life) and ``adaptive`` with
``half_life=None`` (cumulative evidence, the old rule), and how far each adaptive
falls below the better of LRU and LFU (gap, in points). Prints only.
"""

from __future__ import annotations

import argparse
import random
import time

from copage.core.cache import replay
from copage.core.policies import POLICIES, get_policy
from copage.eval.phases import PHASES, phase_hit_rates, phase_trace


def throughput(args: argparse.Namespace) -> None:
    """One line per policy: accesses/s, hits and misses."""
    rng = random.Random(args.seed)
    weights = [1 / (i + 1) for i in range(args.pages)]  # Zipf-like popularity
    trace = [f"p{i}" for i in rng.choices(range(args.pages), weights, k=args.accesses)]
    print(
        f"trace: {args.accesses} accesses over {args.pages} pages (seed {args.seed}), "
        f"capacity {args.capacity}"
    )
    print(f"{'policy':<10}{'accesses/s':>14}{'hits':>9}{'misses':>9}")
    for name in POLICIES.names():
        start = time.perf_counter()
        result = replay(trace, name, args.capacity)
        rate = args.accesses / (time.perf_counter() - start)
        print(f"{name:<10}{rate:>14,.0f}{result.hits:>9}{result.misses:>9}")


def phases(args: argparse.Namespace) -> None:
    """Per-phase hit rates and the adaptive policies' gaps to the better expert."""
    lo, _, hi = args.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    print(f"phases {', '.join(PHASES)} of {args.phase_len} accesses; hit rate per phase; "
          "gap = points below max(LRU, LFU) in that phase")
    print(f"{'k':>3}{'seed':>5}  {'policy':<25}{'phase hit rates':<28}{'gaps (points)':<26}{'worst':>6}")
    worst = {"adaptive": 0.0, "adaptive half_life=None": 0.0}
    for k in args.ks:
        for seed in seeds:
            trace, ranges = phase_trace(k, seed, args.phase_len)
            lru = phase_hit_rates(get_policy("lru"), trace, ranges, k)
            lfu = phase_hit_rates(get_policy("lfu"), trace, ranges, k)
            best = [max(a, b) for a, b in zip(lru, lfu, strict=True)]
            rows = {
                "lru": lru, "lfu": lfu,
                "adaptive": phase_hit_rates(get_policy("adaptive"), trace, ranges, k),
                "adaptive half_life=None": phase_hit_rates(
                    get_policy("adaptive", half_life=None), trace, ranges, k),
            }
            for name, rates in rows.items():
                shown = " ".join(f"{r:.3f}" for r in rates)
                if name in worst:
                    gaps = [100 * (b - r) for b, r in zip(best, rates, strict=True)]
                    worst[name] = max(worst[name], *gaps)
                    gap_text = " ".join(f"{g:5.1f}" for g in gaps)
                    print(f"{k:>3}{seed:>5}  {name:<25}{shown:<28}{gap_text:<26}{max(gaps):>6.1f}")
                else:
                    print(f"{k:>3}{seed:>5}  {name:<25}{shown:<28}")
    print("\nworst gap over all rows (points): "
          + ", ".join(f"{name} {w:.1f}" for name, w in worst.items()))


def main() -> None:
    """Throughput by default; ``--phases`` for the per-phase figures."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--accesses", type=int, default=100_000)
    ap.add_argument("--pages", type=int, default=50)
    ap.add_argument("--capacity", type=int, default=5)
    ap.add_argument("--phases", action="store_true", help="per-phase hit rates (adaptive)")
    ap.add_argument("--seeds", default="0-2", help="phase traces: seed range (default 0-2)")
    ap.add_argument("--phase-len", type=int, default=400, help="accesses per phase (default 400)")
    ap.add_argument("--ks", type=lambda s: [int(x) for x in s.split(",")], default=[3, 5, 8],
                    help="capacities (default 3,5,8)")
    args = ap.parse_args()
    if args.phases:
        phases(args)
    else:
        throughput(args)


if __name__ == "__main__":
    main()
