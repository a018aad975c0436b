"""Per-turn cost of PagedMemory.add (and add + context()) at the 100th vs 10,000th turn.

Prints medians over windows of turns around each point and their ratio, for the
in-memory store with heuristic keywords, plus SQLite append throughput through
PagedMemory. Run: ``python bench/bench_pager.py [--turns 10000]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from copage import PagedMemory
from copage.stores.sqlite import SQLiteStore

SUBJECTS = ["peanut allergy", "Lisbon budget $900", "grant deadline May 2", "dentist Dr. Lee",
            "Rust only at work", "sister Ana 555-0101", "yoga on Tuesdays", "beagle called Miso"]


def text(i: int) -> str:
    return f"About the {SUBJECTS[i % len(SUBJECTS)]}: note {i}, see you on Friday at {i % 12 + 1}pm."


def per_turn(n: int, with_context: bool, keywords: str) -> list[float]:
    mem = PagedMemory(boundary="fixed_10", policy="lru", resident_pages=5, keywords=keywords)
    times: list[float] = []
    for i in range(n):
        t0 = time.perf_counter()
        mem.add("user" if i % 2 == 0 else "assistant", text(i))
        if with_context:
            mem.context()
        times.append(time.perf_counter() - t0)
    return times


def window(times: list[float], at: int, half: int = 50) -> float:
    return statistics.median(times[max(0, at - half) : at + half])


def sqlite_rate(n: int) -> float:
    with tempfile.TemporaryDirectory() as d:
        mem = PagedMemory(store=SQLiteStore(Path(d) / "b.db"), boundary="fixed_10",
                          policy="lru", resident_pages=5)
        t0 = time.perf_counter()
        for i in range(n):
            mem.add("user", text(i))
        return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=10_000)
    args = ap.parse_args()
    n = args.turns
    print(f"PagedMemory, memory store, fixed_10 + lru, k=5, {n} turns; medians of 100-turn windows")
    for keywords in ("heuristic", "discriminative"):
        for ctx in (False, True):
            t = per_turn(n, ctx, keywords)
            a, b = window(t, 100), window(t, n - 50)
            label = "add + context()" if ctx else "add"
            print(f"  {keywords:14s} {label:16s} turn 100: {a * 1e6:7.1f} us   "
                  f"turn {n}: {b * 1e6:7.1f} us   ratio {b / a:.2f}")
    print(f"SQLite (WAL, synchronous=NORMAL) appends through PagedMemory: "
          f"{sqlite_rate(3000):.0f} turns/s")


if __name__ == "__main__":
    main()
