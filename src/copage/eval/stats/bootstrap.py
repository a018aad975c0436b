"""Paired bootstrap for the difference of two methods' mean scores on the same probes."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

MIN_CLUSTERS = 10
_CHUNK_CELLS = 4_000_000  # bound on B x units indices held at once (32 MB of int64)

Seed = int | np.random.Generator


@dataclass(frozen=True)
class BootstrapResult:
    """Observed ``delta = mean(a) - mean(b)``, its percentile CI and two-sided p-value.

    ``unit`` is "probe" or "conversation"; ``n_clusters`` counts the resampling units;
    ``warning`` is set (text) when there are fewer than 10 of them.
    """

    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    unit: str
    n_clusters: int
    B: int
    confidence: float
    warning: str | None = None


def _as_scores(name: str, values: Sequence[float] | npt.ArrayLike) -> npt.NDArray[np.float64]:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a sequence of numbers: {exc}") from None
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} holds missing or non-finite scores; drop or impute them first")
    return arr


def _cluster_sums(
    diff: npt.NDArray[np.float64], clusters: Sequence[Hashable]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Per-cluster sum of differences and probe count, clusters in first-seen order."""
    if len(clusters) != len(diff):
        raise ValueError(f"clusters has {len(clusters)} labels for {len(diff)} probes")
    index: dict[Hashable, int] = {}
    codes = np.fromiter((index.setdefault(c, len(index)) for c in clusters), np.intp, len(diff))
    sums = np.bincount(codes, weights=diff, minlength=len(index)).astype(np.float64)
    counts = np.bincount(codes, minlength=len(index)).astype(np.float64)
    return sums, counts


def paired_bootstrap(
    a_scores: Sequence[float] | npt.ArrayLike,
    b_scores: Sequence[float] | npt.ArrayLike,
    *,
    clusters: Sequence[Hashable] | None = None,
    B: int = 10_000,
    seed: Seed,
    confidence: float = 0.95,
) -> BootstrapResult:
    """Paired bootstrap of ``mean(a) - mean(b)`` (Efron & Tibshirani 1993, ch. 13 and 16).

    Without ``clusters`` each probe is a resampling unit. With ``clusters`` (one label
    per probe, e.g. the conversation id) whole clusters are drawn with replacement and a
    replicate's delta is the mean difference over all probes drawn (cluster bootstrap;
    Field & Welsh 2007), since probes from one conversation are not independent.

    The CI is the percentile interval of the B replicate deltas. The two-sided p-value
    is ``p = min(1, 2 * min(P*(delta* <= 0), P*(delta* >= 0)))``, the shares taken over
    the B replicates: the chance of a replicate on the other side of zero, doubled.
    ``p == 0`` means below 1/B. ``seed`` (int or Generator) is required.
    """
    a = _as_scores("a_scores", a_scores)
    b = _as_scores("b_scores", b_scores)
    if len(a) != len(b):
        raise ValueError(f"a_scores and b_scores differ in length: {len(a)} vs {len(b)}")
    if len(a) == 0:
        raise ValueError("paired_bootstrap needs at least one probe")
    if isinstance(B, bool) or not isinstance(B, int) or B < 1:
        raise ValueError(f"B must be a positive int, got {B!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    diff = a - b
    if clusters is None:
        unit, sums, counts = "probe", diff, np.ones_like(diff)
    else:
        unit = "conversation"
        sums, counts = _cluster_sums(diff, clusters)
    g = len(sums)
    deltas = np.empty(B, dtype=np.float64)
    rows = max(1, _CHUNK_CELLS // g)
    for start in range(0, B, rows):
        stop = min(B, start + rows)
        idx = rng.integers(0, g, size=(stop - start, g))
        total = sums[idx].sum(axis=1)
        deltas[start:stop] = total / g if unit == "probe" else total / counts[idx].sum(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(deltas, [tail, 1.0 - tail])
    p = min(1.0, 2.0 * min(float(np.mean(deltas <= 0)), float(np.mean(deltas >= 0))))
    warning = None
    if g < MIN_CLUSTERS:
        what = "probes" if unit == "probe" else "conversations"
        warning = (
            f"only {g} {what} to resample (fewer than {MIN_CLUSTERS}): "
            "the interval and p-value are unreliable"
        )
    return BootstrapResult(
        delta=float(diff.mean()),
        ci_low=float(low),
        ci_high=float(high),
        p_value=p,
        unit=unit,
        n_clusters=g,
        B=B,
        confidence=confidence,
        warning=warning,
    )
