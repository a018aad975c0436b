"""Krippendorff's alpha for a units x raters matrix with missing ratings."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from copage.core.registry import UnknownNameError

LEVELS = ("nominal", "ordinal", "interval")

Ratings = Sequence[Sequence[float | None]] | npt.NDArray[np.float64]


def _ratings_matrix(ratings: Ratings) -> npt.NDArray[np.float64]:
    try:
        rows = [list(r) for r in ratings]
    except TypeError:
        raise ValueError("ratings must be a units x raters matrix (a list of rows)") from None
    if not rows:
        return np.empty((0, 0), dtype=np.float64)
    if rows and len({len(r) for r in rows}) != 1:
        raise ValueError("ratings must be a units x raters matrix: rows differ in length")
    try:
        arr = np.array([[math.nan if v is None else v for v in r] for r in rows], dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"ratings must be numbers or None: {exc}") from None
    return arr.reshape(len(rows), -1)


def _distances(
    values: npt.NDArray[np.float64], totals: npt.NDArray[np.float64], level: str
) -> npt.NDArray[np.float64]:
    """Squared difference metric delta^2 between every pair of values."""
    if level == "nominal":
        return 1.0 - np.eye(len(values))
    if level == "interval":
        return np.subtract.outer(values, values) ** 2
    # ordinal: (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2 over the values' marginal counts
    cum = np.cumsum(totals)
    lo = np.minimum.outer(np.arange(len(values)), np.arange(len(values)))
    hi = np.maximum.outer(np.arange(len(values)), np.arange(len(values)))
    between = cum[hi] - cum[lo] + totals[lo]
    return (between - (totals[:, None] + totals[None, :]) / 2.0) ** 2


def krippendorff_alpha(ratings: Ratings, level: str = "ordinal") -> float:
    """Krippendorff's alpha = 1 - D_o / D_e (Krippendorff 2011, "Computing Krippendorff's
    Alpha-Reliability", Univ. of Pennsylvania; Hayes & Krippendorff 2007).

    ``ratings[u][r]`` is rater r's value for unit u (``None``/NaN when missing); note
    the ``krippendorff`` PyPI package takes the transpose (raters x units). Values are
    numbers (nominal categories as numeric codes). Built from the coincidence matrix of
    pairable units (two or more ratings); the ordinal metric uses the values' cumulative
    marginal frequencies. Returns NaN when nothing is pairable or when all pairable
    ratings are equal (no variation: alpha is undefined).
    """
    if level not in LEVELS:
        raise UnknownNameError("alpha level", str(level), list(LEVELS))
    data = _ratings_matrix(ratings)
    present = np.isfinite(data)
    values = np.unique(data[present])
    if data.size == 0 or len(values) == 0:
        return math.nan
    codes = np.searchsorted(values, np.where(present, data, values[0]))
    counts = np.zeros((data.shape[0], len(values)), dtype=np.float64)  # units x values
    units = np.broadcast_to(np.arange(data.shape[0])[:, None], data.shape)
    np.add.at(counts, (units[present], codes[present]), 1.0)
    m = counts.sum(axis=1)
    pairable = m >= 2
    counts, m = counts[pairable], m[pairable]
    if len(m) == 0:
        return math.nan
    weighted = counts / (m - 1.0)[:, None]
    coincidence = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    totals = coincidence.sum(axis=1)
    n = totals.sum()
    delta2 = _distances(values, totals, level)
    observed = float((coincidence * delta2).sum())
    expected = float((np.outer(totals, totals) * delta2).sum())
    if expected == 0.0:
        return math.nan
    return 1.0 - (float(n) - 1.0) * observed / expected
