"""Confidence intervals for one proportion."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist


@dataclass(frozen=True)
class Interval:
    """A closed interval ``[low, high]``."""

    low: float
    high: float


def z_value(confidence: float) -> float:
    """Two-sided standard normal quantile for ``confidence`` (1.96 for 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """Wilson score interval for ``successes`` out of ``n`` (Wilson 1927).

    Recommended over the Wald interval for small n and proportions near 0 or 1 by
    Brown, Cai & DasGupta, "Interval Estimation for a Binomial Proportion",
    Statistical Science 16(2), 2001. With ``n == 0`` nothing is known and the interval
    is the whole range ``(0.0, 1.0)``.
    """
    for name, value in (("successes", successes), ("n", n)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {value!r}")
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    z = z_value(confidence)
    if n == 0:
        return Interval(0.0, 1.0)
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n))
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(low, high)
