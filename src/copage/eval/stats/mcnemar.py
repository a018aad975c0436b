"""Exact McNemar test for two methods' pass/fail on the same probes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Outcomes = Sequence[bool] | npt.NDArray[np.bool_]


@dataclass(frozen=True)
class McNemarResult:
    """Discordant counts and the exact two-sided p-value.

    ``b01``: probes A failed and B passed; ``b10``: A passed and B failed.
    """

    b01: int
    b10: int
    p_value: float


def binom_two_sided_half(k: int, n: int) -> float:
    """Exact two-sided binomial p-value of ``k`` successes in ``n`` trials at p = 1/2."""
    if n == 0:
        return 1.0
    tail = min(k, n - k)
    mass = sum(math.comb(n, i) for i in range(tail + 1))
    return min(1.0, float(2 * mass / (1 << n)))


def mcnemar_exact(a_pass: Outcomes, b_pass: Outcomes) -> McNemarResult:
    """Exact (binomial) McNemar test on paired pass/fail outcomes.

    McNemar, Psychometrika 12(2), 1947; the exact form conditions on the discordant
    pairs: under H0, ``b01 ~ Binomial(b01 + b10, 1/2)``; two-sided p is twice the
    smaller tail, capped at 1 (equal to ``scipy.stats.binomtest(b01, b01+b10).pvalue``
    since the null is symmetric). No discordant pairs gives p = 1.
    """
    if len(a_pass) != len(b_pass):
        raise ValueError(f"a_pass and b_pass differ in length: {len(a_pass)} vs {len(b_pass)}")
    b01 = b10 = 0
    for i, (a, b) in enumerate(zip(a_pass, b_pass, strict=True)):
        for name, v in (("a_pass", a), ("b_pass", b)):
            if isinstance(v, str) or v not in (0, 1):  # bools, numpy bools, 0/1
                raise ValueError(f"{name}[{i}] must be a bool, got {v!r}")
        if not a and b:
            b01 += 1
        elif a and not b:
            b10 += 1
    return McNemarResult(b01=b01, b10=b10, p_value=binom_two_sided_half(b01, b01 + b10))
