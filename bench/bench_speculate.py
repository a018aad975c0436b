"""Cost of the speculative fill's planning per turn as the conversation grows (issue 18).

``Speculator.plan`` (the default recall mode's step before every model call, in every
front end) for the next user message of a conversation of N turns, two shapes:

* ``proxy``: the turns of ``bench_proxy.py --shape full`` (pages of 4 turns, 2 resident):
  every message shares most of its words with every page (``tell``, ``item``, ``code``,
  ``word``...), its own words (``w812``) are on no evicted page: nothing stands out,
  the best page must be found among pages that all score alike;
* ``adapters``: the turns of ``bench_adapters.py`` (pages of 10, 5 resident): a few
  common words and some rarer ones (``alpha72``, ``beta33``), so some turns fill.

Per size, ``--turns`` planned messages (the conversation does not change between them);
the median and the mean of the CPU time (``time.process_time``), and how many filled.

    PYTHONPATH=src python bench/bench_speculate.py [--sizes 10,200,800,3000] [--turns 40]
"""

from __future__ import annotations

import argparse
import statistics
import time

from copage import PagedMemory
from copage.session.speculate import Speculator


def proxy_text(n: int) -> str:
    return (f"[abc-800] turn {n}: tell me about item {n} (the code word is w{n}) and how "
            "it relates to the earlier ones")


def adapters_text(i: int) -> str:
    return (f"turn {i} about topic {i % 37}: alpha{i % 101} beta{i % 53} and the number "
            f"{i * 7} in city{i % 11}")


def run(shape: str, n: int, turns: int) -> tuple[float, float, int, int]:
    if shape == "proxy":
        mem = PagedMemory(boundary="fixed_4", resident_pages=2)
        for i in range(n):
            mem.add("user", proxy_text(i))
            mem.add("assistant", "echo: " + proxy_text(i))
        texts = [proxy_text(i) for i in range(n, n + turns)]
    else:
        mem = PagedMemory(boundary="fixed_10", policy="lru", resident_pages=5,
                          keywords="heuristic")
        for i in range(n):
            mem.add("user" if i % 2 == 0 else "assistant", adapters_text(i))
        texts = [adapters_text(i) for i in range(n, n + 2 * turns, 2)]
    spec = Speculator()
    spec.plan(mem, texts[0])  # the index is built on first use
    times, fills = [], 0
    for text in texts:
        t = time.process_time()
        fills += bool(spec.plan(mem, text).paged_in)
        times.append(time.process_time() - t)
    return (1000 * statistics.median(times), 1000 * statistics.mean(times), fills,
            len(mem.evicted))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10,200,800,3000")
    ap.add_argument("--turns", type=int, default=40)
    args = ap.parse_args()
    print(f"{'shape':9}{'turns':>7}{'evicted':>9}{'p50 ms':>9}{'mean ms':>9}{'fills':>7}")
    for shape in ("proxy", "adapters"):
        for n in (int(s) for s in args.sizes.split(",")):
            p50, mean, fills, evicted = run(shape, n, args.turns)
            print(f"{shape:9}{n:>7}{evicted:>9}{p50:>9.3f}{mean:>9.3f}{fills:>7}")


if __name__ == "__main__":
    main()
