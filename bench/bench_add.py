"""Per-turn cost of ``PagedMemory.add`` on real chat text, page closes included.

The turns are the LoCoMo conversations of the given files concatenated (each
turn keeps its speaker and text), repeated until ``--turns`` turns, added one by
one to a ``PagedMemory`` with the library defaults (memory store) or the given
``--keywords``. Prints the mean, median and p99 of ``add`` over windows of the
conversation (turns 1-300, 301-1,000, 1,001-3,000, 3,001-10,000), the share of
the time spent in turns that close a page, and the bookmark index's size.

Run::

    .venv/bin/python bench/bench_add.py ../shared/data/locomo/locomo-sample.json \\
        ../shared/data/locomo/locomo-more.json --turns 10000
    .venv/bin/python bench/bench_add.py --synthetic --turns 10000
    .venv/bin/python bench/bench_add.py ... --keywords askable,contrast --clock cpu
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Sequence

from copage import PagedMemory

WINDOWS = ((0, 300), (300, 1000), (1000, 3000), (3000, 10000))


def chat_turns(files: Sequence[str], n: int) -> list[tuple[str, str]]:
    """(role, text) of the conversations of ``files`` concatenated and repeated to ``n``."""
    from copage.eval.datasets import load_dataset

    base: list[tuple[str, str]] = []
    for path in files:
        for conv in load_dataset(path, seed=0).conversations:
            speakers: list[str] = []
            for turn in conv.turns:
                who = turn.speaker or turn.role
                if who not in speakers:
                    speakers.append(who)
                base.append(("user" if speakers.index(who) % 2 == 0 else "assistant", turn.text))
    if not base:
        raise SystemExit("no turns in the given files")
    return [base[i % len(base)] for i in range(n)]


def pct(xs: Sequence[float], q: float) -> float:
    ordered = sorted(xs)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


#: ``--bookmarks``: the library's bookmarks, or the paper's (4 keywords, ``minimal``, no cap).
BOOKMARKS: dict[str, dict[str, object]] = {
    "default": {},
    "paper": {"n_keywords": 4, "bookmark_format": "minimal", "bookmark_tokens": None},
}


def run(turns: Sequence[tuple[str, str]], keywords: str | None, index: str | None,
        clock: str = "wall", bookmarks: str = "default") -> None:
    settings = dict(BOOKMARKS[bookmarks])
    if keywords is not None:
        settings["keywords"] = keywords
    mem = PagedMemory(**settings) if index is None else PagedMemory(index=index, **settings)
    times: list[float] = []
    closing: list[bool] = []
    now = time.thread_time if clock == "cpu" else time.perf_counter
    gc.collect()
    for role, text in turns:
        pages = len(mem.pages)
        t0 = now()
        mem.add(role, text)
        times.append(now() - t0)
        closing.append(len(mem.pages) != pages)
    label = (keywords or f"{mem.config.keywords} (default)") + f", index {mem.config.index}" + (
        f", bookmarks {bookmarks}")
    stats = mem.stats()
    print(f"keywords {label} ({clock} clock): {len(turns)} turns, {len(mem.pages)} pages; "
          f"bookmark index {stats.bookmark_tokens} tokens")
    print(f"  {'turns':>12s} {'mean ms':>8s} {'median ms':>9s} {'p99 ms':>7s} {'close mean ms':>13s}")
    for lo, hi in WINDOWS:
        win = times[lo:hi]
        if not win:
            break
        closes = [t for t, c in zip(win, closing[lo:hi], strict=True) if c]
        print(f"  {lo + 1:>5d}-{min(hi, len(times)):<6d} {1e3 * statistics.fmean(win):8.3f} "
              f"{1e3 * statistics.median(win):9.3f} {1e3 * pct(win, 0.99):7.3f} "
              f"{1e3 * statistics.fmean(closes) if closes else 0.0:13.3f}")
    share = sum(t for t, c in zip(times, closing, strict=True) if c) / sum(times)
    print(f"  all: mean {1e3 * statistics.fmean(times):.3f} ms, p99 {1e3 * pct(times, 0.99):.3f} ms, "
          f"{share:.0%} of the time in page-closing turns")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="*", help="LoCoMo-format files")
    ap.add_argument("--synthetic", action="store_true",
                    help="bench_pager.py's synthetic chat instead of the files")
    ap.add_argument("--turns", type=int, default=10_000)
    ap.add_argument("--keywords", default="", help="comma-separated extractors (default: the library's)")
    ap.add_argument("--index", default="", help="comma-separated: flat, grouped (default: the library's)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: this thread's CPU time (steadier on a shared machine)")
    ap.add_argument("--bookmarks", default="default",
                    help="comma-separated: default (the library's), paper (4 keywords, "
                         "minimal, no cap)")
    args = ap.parse_args()
    if args.synthetic:
        from bench_pager import text

        turns = [("user" if i % 2 == 0 else "assistant", text(i)) for i in range(args.turns)]
    else:
        turns = chat_turns(args.files, args.turns)
    for kw in [k for k in args.keywords.split(",") if k] or [None]:
        for index in [x for x in args.index.split(",") if x] or [None]:
            for bm in [b for b in args.bookmarks.split(",") if b]:
                if bm not in BOOKMARKS:
                    raise SystemExit(f"unknown --bookmarks {bm!r}; valid: {', '.join(BOOKMARKS)}")
                run(turns, kw, index, args.clock, bm)


if __name__ == "__main__":
    main()
