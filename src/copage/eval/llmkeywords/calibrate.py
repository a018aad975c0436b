"""Choosing ``auto``'s threshold LLM-free: the rule, on conversation masses.

The rule needs no model: on development data where the paper says which
generator wins (synthetic: ``hybrid``; LoCoMo: ``llm-batch``), the threshold is
the midpoint of the gap between the two groups' conversation masses (the
max-margin separator); when the groups overlap, the midpoint of their means.
The benchmark data it is applied to lives in the evaluation package: run
``python -m copage.eval.calibrate_auto`` for the figures in
``docs/llm-bookmarks.md`` (development: ``controlled`` preset and LoCoMo conv-26;
held out: ``ablation`` preset and LoCoMo conv-30).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from copage.core.boundaries import get_boundary
from copage.core.paginate import paginate
from copage.core.types import Page, Turn, page_id, render_turns

__all__ = ["ConversationMass", "choose_threshold", "conversation_pages"]


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
