"""Segmentation error metrics: Pk and WindowDiff.

A segmentation of ``n`` turns is given by its cuts (exclusive page ends, as returned
by ``cuts(..., final=True)``); a cut ``c`` is a boundary between turns ``c-1`` and
``c``; the final cut ``n`` is ignored. Both metrics slide a window of ``k`` turns:
positions ``i`` and ``i+k`` for ``i = 0 .. n-k-1``.
"""

from __future__ import annotations

from collections.abc import Sequence


def _boundaries(cuts: Sequence[int], n: int) -> list[int]:
    marks = [0] * (n + 1)
    for c in cuts:
        if not 0 <= c <= n:
            raise ValueError(f"cut {c} is outside 0..{n}")
        if 0 < c < n:
            marks[c] = 1
    return marks


def default_k(reference: Sequence[int], n: int) -> int:
    """Half the mean reference segment length, rounded half up, at least 1 (Beeferman 1999)."""
    segments = len({c for c in reference if 0 < c < n}) + 1
    return max(1, int(n / (2 * segments) + 0.5))


def _window_counts(marks: list[int], n: int, k: int) -> list[int]:
    prefix = [0]
    for m in marks[1:]:
        prefix.append(prefix[-1] + m)
    # boundaries strictly between turn i and turn i+k: cuts c with i < c <= i+k
    return [prefix[i + k] - prefix[i] for i in range(n - k)]


def _check(n: int, k: int) -> None:
    if n < 2:
        raise ValueError(f"need at least 2 turns to score a segmentation, got {n}")
    if not 1 <= k < n:
        raise ValueError(f"window k must be in 1..{n - 1}, got {k}")


def pk(reference: Sequence[int], hypothesis: Sequence[int], n: int, k: int | None = None) -> float:
    """Pk (Beeferman, Berger & Lafferty 1999): the share of windows where the two
    segmentations disagree on whether positions i and i+k are in the same segment."""
    k = default_k(reference, n) if k is None else k
    _check(n, k)
    ref = _window_counts(_boundaries(reference, n), n, k)
    hyp = _window_counts(_boundaries(hypothesis, n), n, k)
    return sum((r == 0) != (h == 0) for r, h in zip(ref, hyp)) / (n - k)


def window_diff(
    reference: Sequence[int], hypothesis: Sequence[int], n: int, k: int | None = None
) -> float:
    """WindowDiff (Pevzner & Hearst 2002): the share of windows where the numbers of
    boundaries inside the window differ."""
    k = default_k(reference, n) if k is None else k
    _check(n, k)
    ref = _window_counts(_boundaries(reference, n), n, k)
    hyp = _window_counts(_boundaries(hypothesis, n), n, k)
    return sum(r != h for r, h in zip(ref, hyp)) / (n - k)
