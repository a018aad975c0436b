"""Pearson and Spearman correlation over paired scores, skipping missing pairs."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Scores = Sequence[float | None] | npt.NDArray[np.float64]


def as_float_array(name: str, values: Scores) -> npt.NDArray[np.float64]:
    """1-D float array with ``None`` turned into NaN; a clear error for anything else."""
    try:
        arr = np.asarray(
            [math.nan if v is None else v for v in values],
            dtype=np.float64,
        )
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a sequence of numbers or None: {exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def paired_complete(
    x: Scores, y: Scores
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The pairs where both ``x`` and ``y`` are present (not None / NaN)."""
    xa, ya = as_float_array("x", x), as_float_array("y", y)
    if len(xa) != len(ya):
        raise ValueError(f"x and y differ in length: {len(xa)} vs {len(ya)}")
    keep = np.isfinite(xa) & np.isfinite(ya)
    return xa[keep], ya[keep]


def rankdata(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Ranks 1..n, ties given their average rank (as ``scipy.stats.rankdata``'s default)."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=np.float64)
    sorted_vals = values[order]
    starts = np.flatnonzero(np.r_[True, sorted_vals[1:] != sorted_vals[:-1]])
    ends = np.r_[starts[1:], len(values)]
    for s, e in zip(starts, ends, strict=True):
        ranks[order[s:e]] = (s + 1 + e) / 2.0  # mean of ranks s+1..e
    return ranks


def _pearson_arrays(x: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    if len(x) < 2:
        return math.nan
    dx, dy = x - x.mean(), y - y.mean()
    denom = math.sqrt(float(dx @ dx) * float(dy @ dy))
    if denom == 0.0:
        return math.nan
    return max(-1.0, min(1.0, float(dx @ dy) / denom))


def pearson(x: Scores, y: Scores) -> float:
    """Pearson's r over complete pairs; NaN with fewer than 2 pairs or a constant side."""
    return _pearson_arrays(*paired_complete(x, y))


def spearman(x: Scores, y: Scores) -> float:
    """Spearman's rho (Pearson r of average ranks, Spearman 1904) over complete pairs.

    NaN with fewer than 2 pairs or a constant side, as ``scipy.stats.spearmanr``.
    """
    xa, ya = paired_complete(x, y)
    if len(xa) < 2:
        return math.nan
    return _pearson_arrays(rankdata(xa), rankdata(ya))
