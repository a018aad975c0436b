"""Choosing ``auto``'s threshold LLM-free, and checking it on other conversations.

The rule needs no model: on development data where the paper says which
generator wins (synthetic: ``hybrid``; LoCoMo: ``llm-batch``), the threshold is
the midpoint of the gap between the two groups' conversation masses (the
max-margin separator); when the groups overlap, the midpoint of their means.
Run ``python -m copage.llmkeywords.calibrate`` for the figures in
``docs/llm-bookmarks.md`` (development: ``controlled`` preset and LoCoMo conv-26;
held out: ``ablation`` preset and LoCoMo conv-30).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from copage.core.boundaries import get_boundary
from copage.core.paginate import paginate
from copage.core.types import Page, Turn, page_id, render_turns
from copage.llmkeywords.mass import heuristic_mass

LOCOMO_SAMPLE = "/work/shared/data/locomo/locomo-sample.json"


@dataclass(frozen=True, slots=True)
class ConversationMass:
    """One conversation's heuristic-keyword mass and the group it belongs to."""

    dataset: str
    conversation: str
    pages: int
    mass: float


def conversation_pages(turns: Sequence[Turn], boundary: str = "fixed_10") -> list[Page]:
    """Pages of a whole conversation cut as the pager would (token counts left at 0)."""
    spans = paginate(turns, get_boundary(boundary))
    out = []
    for i, s in enumerate(spans):
        chunk = tuple(turns[s.start : s.end])
        out.append(Page(page_id(i), i, chunk, render_turns(list(chunk)), 0))
    return out


def choose_threshold(high: Sequence[float], low: Sequence[float]) -> float:
    """Midpoint of the gap between ``low`` and ``high`` masses (of the means if they overlap)."""
    if not high or not low:
        raise ValueError("both groups need at least one conversation")
    if min(high) > max(low):
        return (min(high) + max(low)) / 2
    return (fmean(high) + fmean(low)) / 2


def _masses(spec: str, only: set[str] | None, boundary: str, n: int) -> list[ConversationMass]:
    from copage.eval.datasets import (
        load_dataset,  # entry point only: the library never imports eval
    )

    ds = load_dataset(spec, seed=0)
    out = []
    for conv in ds.conversations:
        if only and conv.id not in only:
            continue
        pages = conversation_pages(conv.turns, boundary)
        out.append(ConversationMass(ds.name, conv.id, len(pages), heuristic_mass(pages, n)))
    if only and len(out) != len(only):
        raise ValueError(f"{spec}: conversations {sorted(only)} not all found")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Print the masses, the chosen threshold and the held-out choices."""
    p = argparse.ArgumentParser(prog="python -m copage.llmkeywords.calibrate")
    p.add_argument("--locomo", default=LOCOMO_SAMPLE)
    p.add_argument("--boundary", default="fixed_10")
    p.add_argument("-n", type=int, default=4, help="keywords per bookmark (default 4)")
    a = p.parse_args(argv)
    dev_high = _masses("controlled", None, a.boundary, a.n)
    dev_low = _masses(a.locomo, {"conv-26"}, a.boundary, a.n)
    threshold = choose_threshold([m.mass for m in dev_high], [m.mass for m in dev_low])
    held = [(m, "hybrid") for m in _masses("ablation", None, a.boundary, a.n)]
    held += [(m, "llm-batch") for m in _masses(a.locomo, {"conv-30"}, a.boundary, a.n)]
    print("| split | dataset | conversation | pages | mass | auto picks | paper's winner |")
    print("|---|---|---|---|---|---|---|")
    for m, want in [(m, "hybrid") for m in dev_high] + [(m, "llm-batch") for m in dev_low]:
        pick = "hybrid" if m.mass >= threshold else "llm-batch"
        print(f"| dev | {m.dataset} | {m.conversation} | {m.pages} | {m.mass:.3f} | {pick} | {want} |")
    right = 0
    for m, want in held:
        pick = "hybrid" if m.mass >= threshold else "llm-batch"
        right += pick == want
        print(f"| held-out | {m.dataset} | {m.conversation} | {m.pages} | {m.mass:.3f} "
              f"| {pick} | {want} |")
    print(f"\nthreshold (chosen on dev only) = {threshold:.3f}; held-out conversations where "
          f"auto picks the paper's winner: {right}/{len(held)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
