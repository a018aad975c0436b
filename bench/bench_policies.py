"""Replay throughput (accesses/s) per eviction policy on a 100k-access random trace, capacity 5.

Run: ``.venv/bin/python bench/bench_policies.py [--seed N] [--accesses N]``. Prints only.
"""

from __future__ import annotations

import argparse
import random
import time

from copage.core.cache import replay
from copage.core.policies import POLICIES


def main() -> None:
    """Print one line per policy: accesses/s, hits and misses."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--accesses", type=int, default=100_000)
    ap.add_argument("--pages", type=int, default=50)
    ap.add_argument("--capacity", type=int, default=5)
    args = ap.parse_args()
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


if __name__ == "__main__":
    main()
