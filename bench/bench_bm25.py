"""BM25 paths of ``copage.core.retrieval``: is the query-terms-only one-shot path worth keeping?

Routing ranks the evicted pages' bookmarks once per fault (a fresh candidate list each
time). Two ways to score one question over N bookmarks, both the same BM25:

* ``one-shot``: :func:`bm25_scores` on memoised term counts (touches only the query's terms);
* ``index``: build a :class:`BM25Index` over the candidates, then score.

And recall by query over the evicted pages: the pager's incremental index (one add or
remove per eviction / page-in) against rebuilding an index over all evicted pages.

And the best pages of a query over N evicted pages (the speculative fill's ranking,
issue 18): ``BM25Index.top(query, k)`` (max-score pruning) against scoring every page
holding a query word (``score_map``) and sorting, for a question of 8 words drawn as
the pages' words are (``zipf``: a few common words, mostly rarer ones) and one of the 8
commonest words only (``common``: nothing to prune, the worst case).

Run: ``.venv/bin/python bench/bench_bm25.py [--seed N]``. Prints only; compare ratios
within one run (the machine is shared).
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from collections.abc import Callable

from copage.core.retrieval import BM25Index, bm25_scores

WORDS = [f"w{i}" for i in range(3000)]


def _rate(fn: Callable[[], object], repeat: int) -> float:
    """Calls per second of ``fn`` (best of 3 rounds of ``repeat`` calls)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeat):
            fn()
        best = min(best, time.perf_counter() - start)
    return repeat / best


def _evict_and_search(
    index: BM25Index[int], key: int, page: list[str], query: list[str]
) -> Callable[[], object]:
    def run() -> object:
        index.add(key, page)  # the eviction ...
        best = index.best(query)
        index.remove(key)  # ... undone for the next round
        return best

    return run


def main() -> None:
    """Print calls/s per path and candidate count, and the ratio."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    zipf = [1 / (i + 1) for i in range(len(WORDS))]
    print("routing: one question (8 content words) over N bookmarks (6 content words each)")
    print(f"{'N':>6}{'one-shot/s':>14}{'index/s':>12}{'ratio':>8}")
    for n in (20, 100, 400, 1600):
        marks = [Counter(rng.choices(WORDS, zipf, k=6)) for _ in range(n)]
        question = Counter(rng.choices(WORDS, zipf, k=8))
        assert bm25_scores(question, marks) == BM25Index(marks).scores(question)  # type: ignore[arg-type]
        reps = max(20, 40_000 // n)
        one = _rate(lambda: bm25_scores(question, marks), reps)  # noqa: B023
        idx = _rate(lambda: BM25Index(marks).scores(question), reps)  # type: ignore[arg-type]  # noqa: B023
        print(f"{n:>6}{one:>14,.0f}{idx:>12,.0f}{one / idx:>8.1f}")

    print("\nrecall by query: one search after one eviction, over N evicted pages of 300 words")
    print(f"{'N':>6}{'incremental/s':>15}{'rebuild/s':>11}{'ratio':>8}")
    for n in (20, 100, 400):
        pages = [rng.choices(WORDS, zipf, k=300) for _ in range(n + 1)]
        query = rng.choices(WORDS, zipf, k=8)
        index: BM25Index[int] = BM25Index()
        for i in range(n):
            index.add(i, pages[i])
        incremental = _evict_and_search(index, n, pages[n], query)
        reps = max(10, 4_000 // n)
        inc = _rate(incremental, reps)
        reb = _rate(lambda: BM25Index(pages).best(query), max(3, reps // 20))  # type: ignore[arg-type]  # noqa: B023
        print(f"{n:>6}{inc:>15,.0f}{reb:>11,.1f}{inc / reb:>8.0f}")

    print("\nbest pages: N evicted pages of 60 words, top-k pruned against score_map + sort")
    print(f"{'N':>6}{'query':>8}{'k':>4}{'top/s':>10}{'full/s':>10}{'ratio':>8}")
    for n in (30, 100, 300, 1000, 3000):
        pages = [rng.choices(WORDS, zipf, k=60) for _ in range(n)]
        ranked: BM25Index[int] = BM25Index(pages)  # type: ignore[arg-type]
        queries = {"zipf": rng.choices(WORDS, zipf, k=8), "common": WORDS[:8]}
        for name, query in queries.items():
            for k in (1, 8):
                def full(q: list[str] = query, k: int = k,
                         index: BM25Index[int] = ranked) -> list[tuple[int, float]]:
                    found = index.score_map(q)
                    order = sorted((i for i, s in found.items() if s > 0),
                                   key=lambda i: (-found[i], i))
                    return [(i, found[i]) for i in order[:k]]
                assert ranked.top(query, k) == full()
                reps = max(20, 20_000 // n)
                top = _rate(lambda q=query, k=k, index=ranked: index.top(q, k), reps)  # type: ignore[misc]
                plain = _rate(full, reps)
                print(f"{n:>6}{name:>8}{k:>4}{top:>10,.0f}{plain:>10,.0f}{top / plain:>8.1f}")


if __name__ == "__main__":
    main()
