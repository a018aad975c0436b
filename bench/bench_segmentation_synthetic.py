"""Segmentation on synthetic conversations (held-out seeds) against the generator's gold topics.

Usage:
    .venv/bin/python bench/bench_segmentation_synthetic.py [--preset ablation] [--seeds 1000-1004]

Generates the preset once per seed (seeds 1000..1004 were never used while writing or
tuning any strategy), cuts every conversation with fixed_20, topic_shift and segment
(default parameters) offline (``split``) and online (``split_online``, as the pager),
and scores the cuts against ``synthetic["segments"]``, the start turn of each topic
block the generator laid out (filler family blocks, each planted fact / distractor /
small-talk exchange, greeting, closing). Pk and WindowDiff are pooled over
conversations (errors / windows, k = half the mean gold segment length per
conversation), as in bench_segmentation.py. "pages/conv" is the mean page count per
conversation; "x fixed_20" is the strategy's pages over fixed_20's in the same mode.
Two diagnostics (added after the first run, to explain it; not tuned on): "cuts on
gold" is the share of inner cuts (page ends other than the last) that fall exactly on
a gold topic boundary; "cuts mid-exchange" the share that fall right before an
assistant turn, i.e. separate a user turn from its reply.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from copage.core.boundaries import get_boundary, pk, split, split_online, window_diff
from copage.core.boundaries.segmentation_errors import default_k
from copage.core.types import Turn
from copage.eval.datasets.locomo import parse_locomo
from copage.eval.synthetic import generate_preset

STRATEGIES = ("fixed_20", "topic_shift", "segment")
MODES = ("offline", "online")


@dataclass(frozen=True)
class Gold:
    """One conversation's turns and gold cuts (exclusive segment ends, last = n)."""

    turns: tuple[Turn, ...]
    cuts: tuple[int, ...]


@dataclass(frozen=True)
class Score:
    """Pooled result of one strategy in one mode."""

    conversations: int
    pages: int
    turns: int
    pk: float
    window_diff: float
    inner_cuts: int
    on_gold: int
    mid_exchange: int


def gold_conversations(samples: Sequence[dict[str, Any]]) -> list[Gold]:
    """Turns (as the eval loader reads them) and gold topic cuts of each sample."""
    data = parse_locomo(list(samples), name="synthetic")
    out = []
    for sample, conv in zip(samples, data.conversations, strict=True):
        n = len(conv.turns)
        starts = sample["synthetic"]["segments"]
        out.append(Gold(conv.turns, (*[s for s in starts if s > 0], n)))
    return out


def score(convs: Sequence[Gold], name: str, mode: str) -> Score:
    """Cut every conversation with ``name`` (default options) and pool Pk / WindowDiff."""
    do = split if mode == "offline" else split_online
    pages = errs_pk = errs_wd = windows = total = inner = on_gold = mid = 0
    for g in convs:
        cut_pages = do(g.turns, get_boundary(name))
        hyp, pos = [], 0
        for p in cut_pages:
            pos += len(p)
            hyp.append(pos)
        n = len(g.turns)
        gold = set(g.cuts)
        inner += len(hyp) - 1
        on_gold += sum(c in gold for c in hyp[:-1])
        mid += sum(g.turns[c].role == "assistant" for c in hyp[:-1])
        k = default_k(g.cuts, n)
        errs_pk += round(pk(g.cuts, hyp, n, k) * (n - k))
        errs_wd += round(window_diff(g.cuts, hyp, n, k) * (n - k))
        windows += n - k
        pages += len(cut_pages)
        total += n
    return Score(
        len(convs), pages, total, errs_pk / windows, errs_wd / windows, inner, on_gold, mid
    )


def parse_seeds(text: str) -> list[int]:
    """``"1000-1004"`` or ``"1000,1003"`` -> list of seeds."""
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            return list(range(lo, hi + 1))
        return [int(x) for x in text.split(",")]
    except ValueError:
        raise SystemExit(f"--seeds: expected e.g. 1000-1004 or 1000,1002, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--preset", default="ablation")
    ap.add_argument("--seeds", default="1000-1004", type=parse_seeds)
    args = ap.parse_args(argv)
    convs = [
        g for seed in args.seeds for g in gold_conversations(generate_preset(args.preset, seed))
    ]
    n_turns = sum(len(g.turns) for g in convs)
    n_gold = sum(len(g.cuts) for g in convs)
    ks = [default_k(g.cuts, len(g.turns)) for g in convs]
    print(
        f"## {args.preset}, seeds {args.seeds[0]}..{args.seeds[-1]} ({len(convs)} conversations, "
        f"{n_turns} turns, {n_gold} gold topic segments, mean {n_turns / n_gold:.1f} turns; "
        f"k = {min(ks)}..{max(ks)})\n"
    )
    print(
        "| strategy | mode | pages/conv | x fixed_20 | mean turns/page | Pk | WindowDiff "
        "| cuts on gold | cuts mid-exchange |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for mode in MODES:
        base = score(convs, "fixed_20", mode)
        for name in STRATEGIES:
            s = base if name == "fixed_20" else score(convs, name, mode)
            print(
                f"| {name} | {mode} | {s.pages / s.conversations:.2f} | {s.pages / base.pages:.2f} | "
                f"{s.turns / s.pages:.1f} | {s.pk:.3f} | {s.window_diff:.3f} | "
                f"{s.on_gold / s.inner_cuts:.2f} | {s.mid_exchange / s.inner_cuts:.2f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
