"""Share of each request's prompt that repeats the previous request's prefix, and cost.

Each LoCoMo conversation of the given files (its first ``--turns`` turns; the
first speaker is the user) is replayed through a ``PagedMemory`` (library
defaults unless ``--keywords``/``-k`` say otherwise): after every user turn the
app asks for ``context()`` (one request, as a chat app does before the
assistant answers). Prints, per conversation, what ``stats().prompt_cache``
reports: the median and mean prefix share, and the input cost of all requests
paged and full context, uncached and with provider caching priced in.

Run::

    .venv/bin/python bench/bench_prompt_cache.py ../shared/data/locomo/locomo-sample.json \\
        ../shared/data/locomo/locomo-more.json --turns 300
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from typing import Any

from copage import PagedMemory


def replay(turns: Sequence[Any], n: int, settings: dict[str, Any]) -> dict[str, Any]:
    mem = PagedMemory(**settings)
    first = turns[0].speaker or turns[0].role
    for turn in turns[:n]:
        role = "user" if (turn.speaker or turn.role) == first else "assistant"
        mem.add(role, turn.text, speaker=turn.speaker, timestamp=turn.timestamp,
                session=turn.session)
        if role == "user":
            mem.context()
    pc = mem.stats().prompt_cache
    assert pc is not None
    return {**pc, "mean": statistics.fmean(mem.pager.prompt_meter.shares)}


def main() -> None:
    from copage.eval.datasets import load_dataset

    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--turns", type=int, default=300)
    ap.add_argument("--keywords", default="")
    ap.add_argument("-k", type=int, default=0, help="resident pages (default: the library's)")
    ap.add_argument("--evict-batch", type=int, default=0, help="default: the library's")
    args = ap.parse_args()
    settings: dict[str, Any] = {}
    if args.keywords:
        settings["keywords"] = args.keywords
    if args.k:
        settings["resident_pages"] = args.k
    if args.evict_batch:
        settings["evict_batch"] = args.evict_batch
    print(f"first {args.turns} turns, a request after every user turn; settings {settings or 'defaults'}")
    print(f"{'conversation':12s} {'requests':>8s} {'median':>6s} {'mean':>6s}  "
          "gpt-4o-mini USD: paged / cached / full / full cached   "
          "claude-haiku-4-5 USD: paged / cached / full / full cached")
    for path in args.files:
        for conv in load_dataset(path, seed=0).conversations:
            r = replay(conv.turns, args.turns, settings)
            o, a = r["cost_usd"]["gpt-4o-mini"], r["cost_usd"]["claude-haiku-4-5"]
            print(f"{conv.id:12s} {r['requests']:8d} {r['prefix_share_median']:6.3f} {r['mean']:6.3f}  "
                  f"{o['paged']:.4f} / {o['paged_cached']:.4f} / {o['full']:.4f} / {o['full_cached']:.4f}   "
                  f"{a['paged']:.4f} / {a['paged_cached']:.4f} / {a['full']:.4f} / {a['full_cached']:.4f}")


if __name__ == "__main__":
    main()
