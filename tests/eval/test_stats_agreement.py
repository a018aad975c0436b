"""Correlations, Krippendorff's alpha and the multi-judge summary."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from copage.core.registry import UnknownNameError
from copage.eval.stats import (
    krippendorff_alpha,
    multi_judge_summary,
    pearson,
    rankdata,
    spearman,
)

nan = math.nan
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C:
# 4 observers (rows) x 12 units, values 1..5, missing data. Published alphas:
# nominal 0.743, ordinal 0.815, interval 0.849.
KRIPP_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
)


def _random_scores(seed: int, n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.integers(1, 6, n).astype(float)  # many ties, like judge scores
    y = np.clip(x + rng.integers(-2, 3, n), 1, 5)
    return x, y


@pytest.mark.parametrize("seed", range(5))
def test_pearson_and_spearman_match_scipy(seed: int) -> None:
    x, y = _random_scores(seed)
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert np.array_equal(rankdata(x), stats.rankdata(x))


def test_missing_pairs_are_dropped() -> None:
    x = [1.0, 2.0, None, 4.0, 5.0, nan]
    y = [2.0, 1.0, 3.0, 4.0, None, 6.0]
    kept_x, kept_y = [1.0, 2.0, 4.0], [2.0, 1.0, 4.0]
    assert pearson(x, y) == pytest.approx(stats.pearsonr(kept_x, kept_y).statistic)
    assert spearman(x, y) == pytest.approx(0.5)  # ranks (1,2,3) vs (2,1,3)


def test_degenerate_correlations_are_nan() -> None:
    assert math.isnan(pearson([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert math.isnan(spearman([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]))
    assert math.isnan(pearson([1.0], [2.0]))
    assert math.isnan(spearman([None, None], [1.0, 2.0]))
    assert pearson([1.0, 2.0], [2.0, 4.0]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="length"):
        pearson([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="numbers"):
        pearson(["a"], [1.0])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_alpha_reproduces_krippendorffs_worked_example(level: str, published: float) -> None:
    units_by_raters = KRIPP_2011.T
    assert krippendorff_alpha(units_by_raters, level) == pytest.approx(published, abs=5e-4)
    as_lists = [[None if math.isnan(v) else v for v in row] for row in units_by_raters]
    assert krippendorff_alpha(as_lists, level) == krippendorff_alpha(units_by_raters, level)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_matches_the_reference_package(seed: int, level: str) -> None:
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, 40)
    data = np.clip(truth[:, None] + rng.integers(-1, 2, (40, 4)), 1, 5).astype(float)
    data[rng.random(data.shape) < 0.2] = nan
    ref = krippendorff.alpha(data.T, level_of_measurement=level)  # it takes raters x units
    assert krippendorff_alpha(data, level) == pytest.approx(ref, abs=1e-10)


def test_alpha_edge_cases() -> None:
    assert math.isnan(krippendorff_alpha([[3, 3], [3, 3]], "ordinal"))  # no variation
    assert math.isnan(krippendorff_alpha([[None, None], [None, None]]))  # all missing
    assert math.isnan(krippendorff_alpha([[1, None], [None, 2]]))  # nothing pairable
    assert math.isnan(krippendorff_alpha([]))
    # one unit, two raters who disagree: D_o and D_e are equal, alpha = 0
    assert krippendorff_alpha([[1, 2]], "interval") == pytest.approx(0.0)
    assert krippendorff_alpha([[1, 1], [2, 2], [5, 5]], "ordinal") == pytest.approx(1.0)
    with pytest.raises(UnknownNameError, match="nominal, ordinal, interval"):
        krippendorff_alpha([[1, 2]], "ratio")
    with pytest.raises(ValueError, match="rows differ"):
        krippendorff_alpha([[1, 2], [1]])
    with pytest.raises(ValueError, match="matrix"):
        krippendorff_alpha([1, 2, 3])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="numbers or None"):
        krippendorff_alpha([["a", "b"]])  # type: ignore[list-item]


def test_multi_judge_summary_by_hand() -> None:
    scores: dict[str, list[float | None]] = {
        "gpt": [1.0, 2.0, 3.0, 5.0],
        "claude": [1.0, 1.0, 2.0, 4.0],
        "glm": [2.0, None, 3.0, 5.0],
    }
    s = multi_judge_summary(scores)
    assert s.judges == ("gpt", "claude", "glm") and s.n_items == 4
    assert s.judge_means == pytest.approx({"gpt": 2.75, "claude": 2.0, "glm": 10 / 3})
    assert s.judge_counts == {"gpt": 4, "claude": 4, "glm": 3}
    assert s.item_means == pytest.approx((4 / 3, 1.5, 8 / 3, 14 / 3))
    assert s.overall == pytest.approx((4 / 3 + 1.5 + 8 / 3 + 14 / 3) / 4)
    assert [(p.judge_a, p.judge_b, p.n) for p in s.pairs] == [
        ("gpt", "claude", 4),
        ("gpt", "glm", 3),
        ("claude", "glm", 3),
    ]
    gc = s.pair("claude", "gpt")
    assert gc.pearson == pytest.approx(stats.pearsonr(scores["gpt"], scores["claude"]).statistic)
    assert gc.spearman == pytest.approx(stats.spearmanr(scores["gpt"], scores["claude"]).statistic)
    # gpt vs glm on the items both scored: (1, 3, 5) vs (2, 3, 5)
    assert s.pair("gpt", "glm").pearson == pytest.approx(6 / math.sqrt(8 * 42 / 9))
    assert s.pair("gpt", "glm").spearman == pytest.approx(1.0)
    matrix = np.array([[1, 1, 2], [2, 1, nan], [3, 2, 3], [5, 4, 5]], dtype=float)
    assert s.alpha_ordinal == pytest.approx(krippendorff_alpha(matrix, "ordinal"))
    with pytest.raises(KeyError, match="judges: gpt, claude, glm"):
        s.pair("gpt", "gpt")


def test_multi_judge_summary_edges() -> None:
    one = multi_judge_summary({"solo": [4.0, None]})
    assert one.pairs == () and math.isnan(one.alpha_ordinal)
    assert one.item_means[0] == 4.0 and math.isnan(one.item_means[1])
    assert one.overall == 4.0
    none = multi_judge_summary({"a": [None, None], "b": [None, None]})
    assert math.isnan(none.overall) and math.isnan(none.judge_means["a"])
    assert math.isnan(none.pair("a", "b").pearson) and none.pair("a", "b").n == 0
    const = multi_judge_summary({"a": [3.0, 3.0], "b": [3.0, 3.0]})
    assert math.isnan(const.alpha_ordinal) and math.isnan(const.pair("a", "b").spearman)
    with pytest.raises(ValueError, match="at least one judge"):
        multi_judge_summary({})
    with pytest.raises(ValueError, match="different numbers"):
        multi_judge_summary({"a": [1.0], "b": [1.0, 2.0]})
