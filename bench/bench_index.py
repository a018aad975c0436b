"""Flat vs grouped bookmark index: routing_top1 and index size on LoCoMo.

Each LoCoMo conversation of the given files is simulated as ``copage simulate``
does (placement ``end``, fixed_10 + LRU, k = 5, ``minimal``; ``--keywords``,
default the library's ``contrast``) with the flat index and with the grouped
index (cap ``--index-tokens``), grouping by ``range`` or ``session``, and a
routed group giving its ``best_page`` (BM25 of the question over its evicted
pages' text, what ``recall`` of a group does) or routed again over its pages'
``bookmarks``. Prints routing_top1 per conversation and the mean, and the
bookmark index's tokens at the end of each conversation.

Run::

    .venv/bin/python bench/bench_index.py ../shared/data/locomo/locomo-sample.json \\
        ../shared/data/locomo/locomo-more.json
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from copage.core.config import (
    DEFAULT_BOOKMARK_TOKENS,
    DEFAULT_FORMAT,
    DEFAULT_KEYWORDS,
    DEFAULT_N_KEYWORDS,
    PagerConfig,
)
from copage.core.pager import Pager
from copage.eval.datasets import load_dataset
from copage.eval.simulation import Cell, run_conversation

VARIANTS = (("flat", "range", "best_page"), ("grouped", "range", "best_page"),
            ("grouped", "range", "bookmarks"), ("grouped", "session", "best_page"),
            ("grouped", "session", "bookmarks"))


class CappedCell:
    """A cell whose pager config has another index cap / group size."""

    def __init__(self, cell: Cell, **options: Any) -> None:
        self.cell, self.options = cell, options

    def config(self) -> PagerConfig:
        return replace(self.cell.config(), **self.options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cell, name)


def index_tokens(cell: Any, conv: Any) -> int:
    pager = Pager(cell.config())
    for turn in conv.turns:
        pager.add(turn)
    pager.close_open_page()
    return pager.index_tokens()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--keywords", default=DEFAULT_KEYWORDS)
    ap.add_argument("--index-tokens", type=int, default=512)
    ap.add_argument("--group-pages", type=int, default=8)
    ap.add_argument("--bookmarks", choices=("paper", "default"), default="paper",
                    help="paper: 4 keywords, minimal, no cap; default: the library's "
                         "(compact, 12 offered, capped at 12 tokens)")
    args = ap.parse_args()
    shape: dict[str, Any] = {} if args.bookmarks == "paper" else {
        "format": DEFAULT_FORMAT, "n_keywords": DEFAULT_N_KEYWORDS,
        "bookmark_tokens": DEFAULT_BOOKMARK_TOKENS}
    convs = [c for f in args.files for c in load_dataset(f, seed=0).conversations]
    print(f"fixed_10 + lru, k=5, end, {args.bookmarks} bookmarks, {args.keywords}; "
          f"cap {args.index_tokens} tokens, "
          f"{args.group_pages} pages per range group; routing_top1 (live index tokens at the end)")
    print(f"{'index':8s} {'group_by':8s} {'group gives':11s} "
          + " ".join(f"{c.id:>14s}" for c in convs) + f" {'mean':>6s}")
    for index, group_by, recall in VARIANTS:
        cell: Any = CappedCell(Cell("fixed_10", "lru", 5, args.keywords, index=index,
                                    group_by=group_by, group_recall=recall, **shape),
                               index_tokens=args.index_tokens, group_pages=args.group_pages)
        row = []
        for conv in convs:
            run = run_conversation(conv, cell, {})
            credit = [o.routing for o in run.outcomes if o.routing is not None]
            row.append((sum(credit) / max(len(credit), 1), index_tokens(cell, conv)))
        mean = sum(r for r, _ in row) / len(row)
        print(f"{index:8s} {group_by:8s} {recall:11s} "
              + " ".join(f"{r:6.3f} ({t:5d})" for r, t in row) + f" {mean:6.3f}")


if __name__ == "__main__":
    main()
