"""Paired bootstrap: determinism, definitions, cluster resampling, speed."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from copage.eval.stats import paired_bootstrap


def _scores(seed: int, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 6, n).astype(float)
    b = np.clip(a - rng.integers(-1, 2, n), 1, 5)
    return a, b


def test_same_seed_same_result_and_observed_delta() -> None:
    a, b = _scores(1)
    r1 = paired_bootstrap(a, b, B=2000, seed=7)
    r2 = paired_bootstrap(list(a), list(b), B=2000, seed=np.random.default_rng(7))
    assert r1 == r2
    assert r1.delta == pytest.approx(float(np.mean(a - b)))
    assert r1.ci_low <= r1.delta <= r1.ci_high
    assert (r1.unit, r1.n_clusters, r1.B, r1.warning) == ("probe", 200, 2000, None)


def test_replicates_and_p_value_follow_the_documented_definition() -> None:
    a, b = _scores(2, n=50)
    B, seed = 5000, 11
    res = paired_bootstrap(a, b, B=B, seed=seed)
    idx = np.random.default_rng(seed).integers(0, 50, size=(B, 50))
    deltas = (a - b)[idx].mean(axis=1)
    p = min(1.0, 2 * min(np.mean(deltas <= 0), np.mean(deltas >= 0)))
    assert res.p_value == pytest.approx(p)
    assert res.ci_low == pytest.approx(np.quantile(deltas, 0.025))
    assert res.ci_high == pytest.approx(np.quantile(deltas, 0.975))


def test_spread_matches_the_standard_error() -> None:
    a, b = _scores(3, n=400)
    res = paired_bootstrap(a, b, B=10_000, seed=0)
    d = a - b
    se = d.std() / np.sqrt(len(d))
    assert res.ci_high - res.ci_low == pytest.approx(2 * 1.96 * se, rel=0.06)


def test_identical_methods_give_p_one_and_clear_shift_gives_p_zero() -> None:
    a, _ = _scores(4)
    same = paired_bootstrap(a, a, B=1000, seed=0)
    assert (same.delta, same.ci_low, same.ci_high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    shifted = paired_bootstrap(a + 1.0, a, B=1000, seed=0)
    assert shifted.p_value == 0.0 and shifted.ci_low == pytest.approx(1.0)


def test_singleton_clusters_reproduce_probe_resampling() -> None:
    a, b = _scores(5, n=30)
    by_probe = paired_bootstrap(a, b, B=3000, seed=3)
    by_cluster = paired_bootstrap(a, b, clusters=[f"c{i}" for i in range(30)], B=3000, seed=3)
    assert by_cluster.unit == "conversation"
    for field in ("delta", "ci_low", "ci_high", "p_value"):
        assert getattr(by_cluster, field) == pytest.approx(getattr(by_probe, field))


def test_cluster_replicates_pool_the_probes_drawn() -> None:
    # conversation X: 3 probes with difference 1; Y: 1 probe with difference 0.
    # Resamples XX -> 1, XY/YX -> 3/4, YY -> 0 with chances 1/4, 1/2, 1/4.
    a = [1.0, 1.0, 1.0, 0.0]
    b = [0.0, 0.0, 0.0, 0.0]
    res = paired_bootstrap(a, b, clusters=["X", "X", "X", "Y"], B=20_000, seed=1)
    assert res.delta == 0.75 and res.n_clusters == 2
    assert (res.ci_low, res.ci_high) == (0.0, 1.0)
    assert res.p_value == pytest.approx(0.5, abs=0.03)  # 2 * P(delta* <= 0) = 2 * 1/4
    assert res.warning is not None and "2 conversations" in res.warning


def test_warns_below_ten_units() -> None:
    assert paired_bootstrap([1.0] * 9, [0.0] * 9, B=100, seed=0).warning is not None
    assert paired_bootstrap([1.0] * 10, [0.0] * 10, B=100, seed=0).warning is None
    labels = [i % 9 for i in range(90)]
    res = paired_bootstrap([1.0] * 90, [0.0] * 90, clusters=labels, B=100, seed=0)
    assert res.n_clusters == 9 and res.warning is not None


def test_n_of_one() -> None:
    res = paired_bootstrap([3.0], [1.0], B=100, seed=0)
    assert (res.delta, res.ci_low, res.ci_high, res.p_value) == (2.0, 2.0, 2.0, 0.0)
    assert res.warning is not None


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "match"),
    [
        ([1.0], [1.0, 2.0], {}, "length"),
        ([], [], {}, "at least one"),
        ([1.0, float("nan")], [1.0, 2.0], {}, "missing"),
        ([1.0, None], [1.0, 2.0], {}, "missing"),
        (["x"], [1.0], {}, "numbers"),
        ([1.0], [1.0], {"B": 0}, "B must"),
        ([1.0], [1.0], {"confidence": 1.5}, "confidence"),
        ([1.0, 2.0], [1.0, 2.0], {"clusters": ["a"]}, "labels"),
    ],
)
def test_bad_input_is_a_clear_error(
    a: list[Any], b: list[Any], kwargs: dict[str, Any], match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        paired_bootstrap(a, b, seed=0, **kwargs)


