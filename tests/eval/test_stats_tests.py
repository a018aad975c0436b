"""Wilson intervals and the exact McNemar test against scipy and hand values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from copage.eval.stats import Interval, binom_two_sided_half, mcnemar_exact, wilson_interval


@pytest.mark.parametrize("n", [1, 2, 5, 17, 96, 500])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_scipy(n: int, confidence: float) -> None:
    for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
        ref = stats.binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
        got = wilson_interval(k, n, confidence)
        assert got.low == pytest.approx(ref.low, abs=1e-12)
        assert got.high == pytest.approx(ref.high, abs=1e-12)


def test_wilson_hand_values() -> None:
    z2 = 1.959963984540054**2
    iv0 = wilson_interval(0, 10)
    assert iv0.low == 0.0 and iv0.high == pytest.approx(z2 / (10 + z2))
    # the paper's recall accuracy 59.4% [49.4, 68.7] is 57 of 96
    iv = wilson_interval(57, 96)
    assert (round(100 * iv.low, 1), round(100 * iv.high, 1)) == (49.4, 68.7)


def test_wilson_no_trials_is_the_whole_range() -> None:
    assert wilson_interval(0, 0) == Interval(0.0, 1.0)


@pytest.mark.parametrize(
    ("k", "n", "confidence", "error"),
    [
        (3, 2, 0.95, ValueError),
        (-1, 2, 0.95, ValueError),
        (1, 2, 1.0, ValueError),
        (1, 2, 0.0, ValueError),
        (1.0, 2, 0.95, TypeError),
        (True, 2, 0.95, TypeError),
    ],
)
def test_wilson_rejects_bad_input(k: object, n: int, confidence: float, error: type) -> None:
    with pytest.raises(error):
        wilson_interval(k, n, confidence)  # type: ignore[arg-type]


def test_mcnemar_counts_discordant_pairs_and_matches_hand_value() -> None:
    a = [True, True, True, True, True, False, False]
    b = [False, False, False, False, False, False, True]
    res = mcnemar_exact(a, b)
    assert (res.b01, res.b10) == (1, 5)
    assert res.p_value == pytest.approx(2 * (1 + 6) / 64)  # 2 * P(X <= 1), X ~ Bin(6, 1/2)


def test_mcnemar_all_one_way_and_ties() -> None:
    assert mcnemar_exact([True] * 5, [False] * 5).p_value == pytest.approx(2 / 32)
    assert mcnemar_exact([True, False], [False, True]).p_value == 1.0
    assert mcnemar_exact([True, False], [True, False]) == mcnemar_exact([], [])
    assert mcnemar_exact([], []).p_value == 1.0


def test_mcnemar_matches_scipy_binomtest() -> None:
    for n in (0, 1, 2, 5, 10, 21, 40):
        for k in range(n + 1):
            ref = stats.binomtest(k, n, 0.5).pvalue if n else 1.0
            assert binom_two_sided_half(k, n) == pytest.approx(ref, rel=1e-9, abs=1e-15)


def test_mcnemar_large_counts_stay_finite() -> None:
    p = binom_two_sided_half(900, 2000)
    assert 0.0 < p < 1e-4 and math.isfinite(p)
    assert p == pytest.approx(stats.binomtest(900, 2000).pvalue, rel=1e-9)


def test_mcnemar_accepts_numpy_bools_and_rejects_junk() -> None:
    res = mcnemar_exact(np.array([True, False]), np.array([False, False]))
    assert (res.b01, res.b10) == (0, 1)
    with pytest.raises(ValueError, match="length"):
        mcnemar_exact([True], [True, False])
    with pytest.raises(ValueError, match=r"b_pass\[0\]"):
        mcnemar_exact([True], ["yes"])  # type: ignore[list-item]
