"""What ``PagedMemory.search`` costs as a conversation grows: every closed page (the
default) against the evicted pages only.

Seeded synthetic chat (the paraphrase bench's filler) at the library's defaults
(paging by budget) and at the paper's (``fixed_10``, 4 resident pages), BM25 only
(``dense=None``: the meaning channel's cost is ``bench_dense.py``'s). For each
length: the first search (it builds the index), then the mean of ``--queries``
later searches, both scopes in one process, interleaved. CPU clock by default, so
a shared machine's other load counts less; compare the two scopes' ratios.

    python bench/bench_search.py --turns 300,2000,10000 --queries 50
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from copage import PagedMemory
from copage.eval.paraphrase import synthetic_lines

WORDS = ("garden", "trip", "dentist", "sister", "Porto", "budget", "cat", "concert", "recipe",
         "deadline", "train", "allergy", "painting", "coffee", "weekend", "museum")


def _memory(turns: int, paper: bool) -> PagedMemory:
    mem = PagedMemory(boundary="fixed_10", resident_pages=4) if paper else PagedMemory()
    for line in synthetic_lines(turns, seed=0):
        mem.add(line.role, line.text)
    return mem


def _search_ms(clock: Callable[[], float], mem: PagedMemory, query: str, scope: bool) -> float:
    t0 = clock()
    mem.search(query, dense=None, include_resident=scope)
    return (clock() - t0) * 1000


def run(turns: int, queries: int, paper: bool, clock: Callable[[], float]) -> dict[str, float]:
    rng = random.Random(turns)
    qs = [" ".join(rng.sample(WORDS, 3)) for _ in range(queries)]
    out: dict[str, float] = {}
    for scope in (True, False):  # a fresh memory each, so each first search builds its index
        mem = _memory(turns, paper)
        out[f"first_{scope}"] = _search_ms(clock, mem, qs[0], scope)
        out[f"pages_{scope}"] = len(mem.pages) if scope else len(mem.evicted)
    mem = _memory(turns, paper)
    later: dict[bool, list[float]] = {True: [], False: []}
    for q in qs:
        for scope in (True, False):
            later[scope].append(_search_ms(clock, mem, q, scope))
    for scope in (True, False):
        out[f"later_{scope}"] = statistics.mean(later[scope][1:])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", default="300,2000,10000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = ap.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print("| paging | turns | pages searched (all / evicted) | first search ms (all / evicted) "
          "| later search ms (all / evicted) |")
    print("|---|---|---|---|---|")
    for paper in (False, True):
        for n in (int(x) for x in args.turns.split(",")):
            r = run(n, args.queries, paper, clock)
            print(f"| {'fixed_10, 4 resident' if paper else 'defaults (budget)'} | {n:,} "
                  f"| {r['pages_True']} / {r['pages_False']} "
                  f"| {r['first_True']:.1f} / {r['first_False']:.1f} "
                  f"| {r['later_True']:.2f} / {r['later_False']:.2f} |")


if __name__ == "__main__":
    main()
