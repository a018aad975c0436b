"""``topic_shift``: TextTiling-style lexical cohesion boundaries.

Hearst, M. A. (1997). TextTiling: Segmenting text into multi-paragraph subtopic
passages. Computational Linguistics 23(1), 33-64. Block comparison: the gap score is
the cosine of content-word count vectors of the ``block`` units before and after the
gap; scores get one round of average smoothing (width 3); each valley (local
minimum) gets a depth score (left peak - s) + (right peak - s), climbing while
scores rise; a valley is a boundary when its depth exceeds mean - sd/2 of the
valley depths (Hearst's liberal cutoff).

Units: Hearst uses token-sequences of w=20 words and blocks of k=6 of them. A chat
turn is the natural unit and averages 22-25 words on LoCoMo, so one turn stands for
one token-sequence and ``block=6`` turns (fixed in advance, not tuned). Hearst also
requires at least three token-sequences between boundaries: ``min_page=3`` turns.

Online, the buffer starts at the previous cut; the strategy is also given the last
``block`` turns before it (``before``), so the first gap of the buffer compares a
full block on each side instead of one turn against six (which reads as a valley
and made one-turn pages).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from copage.core.registry import check_options
from copage.core.types import Turn

from ._common import positive_int
from .vectors import Matrix, cosine, count_matrix


def gap_scores(counts: Matrix, block: int) -> list[float]:
    """Cohesion at each gap g=1..n-1 between the ``block`` turns before and after it."""
    n = counts.shape[0]
    prefix = np.vstack([np.zeros((1, counts.shape[1])), np.cumsum(counts, axis=0)])
    out = []
    for g in range(1, n):
        left = prefix[g] - prefix[max(0, g - block)]
        right = prefix[min(n, g + block)] - prefix[g]
        out.append(cosine(left, right))
    return out


def smooth(scores: Sequence[float]) -> list[float]:
    """One round of width-3 average smoothing (edges average what exists)."""
    n = len(scores)
    return [
        sum(scores[max(0, i - 1) : i + 2]) / len(scores[max(0, i - 1) : i + 2]) for i in range(n)
    ]


def valley_depths(scores: Sequence[float]) -> dict[int, float]:
    """Depth score of every local minimum, keyed by score index (Hearst 1997, sec. 5.3)."""
    out: dict[int, float] = {}
    n = len(scores)
    for i in range(n):
        s = scores[i]
        if (i > 0 and scores[i - 1] < s) or (i + 1 < n and scores[i + 1] < s):
            continue
        if i > 0 and scores[i - 1] == s and (i - 1) in out:
            continue  # one boundary per flat valley bottom
        lo = i
        while lo > 0 and scores[lo - 1] >= scores[lo]:
            lo -= 1
        hi = i
        while hi + 1 < n and scores[hi + 1] >= scores[hi]:
            hi += 1
        depth = (scores[lo] - s) + (scores[hi] - s)
        if depth > 0:
            out[i] = depth
    return out


def texttiling_cuts(
    turns: Sequence[Turn], block: int, *, start: int = 0, min_page: int = 1, final: bool = True,
) -> tuple[list[int], dict[int, float]]:
    """Boundary positions (cut before turn g) and the depth of every valley gap.

    ``turns[:start]`` is context only (the end of the previous page): its turns fill
    the left block of the first gaps, so a gap right after the previous cut is not
    scored against a one-turn block, and no boundary is placed in it. The cutoff
    statistics cover the valleys after ``start``. Boundaries are then taken deepest
    first, skipping any closer than ``min_page`` turns to an accepted one or to
    ``start`` (and, when ``final``, to the end): Hearst's rule against very close
    boundaries.
    """
    n = len(turns)
    if n - start < 2:
        return [], {}
    scores = smooth(gap_scores(count_matrix(turns), block))
    depths = {i + 1: d for i, d in valley_depths(scores).items() if i + 1 > start}
    if not depths:
        return [], depths
    vals = np.array(list(depths.values()))
    mean, sd = float(vals.mean()), float(vals.std())
    cutoff = mean - sd / 2.0
    strong = [g for g in depths if depths[g] > cutoff or sd == 0.0]
    accepted: list[int] = []
    for g in sorted(strong, key=lambda g: (-depths[g], g)):
        if g - start < min_page or (final and n - g < min_page):
            continue
        if all(abs(g - a) >= min_page for a in accepted):
            accepted.append(g)
    return sorted(accepted), depths


class TopicShift:
    """TextTiling boundaries over turns (see module docstring).

    The strategy sees ``before``: the last ``block`` turns of the previous page
    (``lookbehind``), so the first gaps of the buffer compare full blocks. Cuts are
    at least ``min_page`` turns apart (Hearst 1997: at least three token-sequences
    between boundaries; a turn is one token-sequence here).

    Incremental use: nothing is committed before the buffer holds ``4 * block`` turns;
    then boundaries followed by at least ``block`` turns are committed. If the buffer
    reaches ``max_buffer`` (default ``8 * block``) with no boundary to commit, the
    deepest valley with ``block`` turns of lookahead (else ``len - block``) is cut,
    so the buffer, and the cost of a call, stay bounded.
    """

    def __init__(self, block: int = 6, max_buffer: int | None = None, min_page: int = 3) -> None:
        self.block = positive_int("topic_shift", "block", block)
        self.max_buffer = positive_int(
            "topic_shift", "max_buffer", max_buffer if max_buffer is not None else 8 * self.block
        )
        if self.max_buffer < 2 * self.block:
            raise ValueError(f"topic_shift: max_buffer must be >= 2*block ({2 * self.block})")
        self.min_page = positive_int("topic_shift", "min_page", min_page)
        if self.min_page > self.block:
            raise ValueError(f"topic_shift: min_page must be <= block ({self.block})")
        self.lookbehind = self.block
        self.name = "topic_shift"

    def cuts(
        self, turns: Sequence[Turn], *, final: bool, before: Sequence[Turn] = ()
    ) -> list[int]:
        """TextTiling cuts on the buffer; see the class docstring for commitment."""
        n, ctx = len(turns), len(before)
        window = [*before, *turns] if ctx else turns
        found, depths = texttiling_cuts(
            window, self.block, start=ctx, min_page=self.min_page, final=final)
        found = [g - ctx for g in found]
        depths = {g - ctx: d for g, d in depths.items()}
        if final:
            return [c for c in found if c < n] + ([n] if n else [])
        if n < min(4 * self.block, self.max_buffer):
            return []
        ready = [c for c in found if c + self.block <= n]
        if ready or n < self.max_buffer:
            return ready
        eligible = {g: d for g, d in depths.items()
                    if g + self.block <= n and g >= self.min_page}
        return [max(eligible, key=lambda g: (eligible[g], -g))] if eligible else [n - self.block]

    def __repr__(self) -> str:
        return (f"TopicShift(block={self.block}, max_buffer={self.max_buffer}, "
                f"min_page={self.min_page})")


def make_topic_shift(**options: object) -> TopicShift:
    """Registry factory for ``topic_shift`` (options ``block``, ``max_buffer``, ``min_page``)."""
    check_options("boundary 'topic_shift'", options,
                  ["block", "max_buffer", "min_page", "tokenizer"])
    block = positive_int("topic_shift", "block", options.get("block", 6))
    mb = options.get("max_buffer")
    return TopicShift(
        block, None if mb is None else positive_int("topic_shift", "max_buffer", mb),
        positive_int("topic_shift", "min_page", options.get("min_page", 3)),
    )
