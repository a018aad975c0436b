"""Per-token NLL statistics of the fault-detection experiment.

Per-token NLL is ``-logprob`` of each generated token. The rolling NLL is the
mean over every window of ``w`` consecutive tokens (stride 1), following the
paper's ``w = 32``; a reply shorter than ``w`` tokens has a single window over
the whole reply. The spike the hypothesis predicts is the maximum window.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_WINDOW = 32


def rolling_mean(values: Sequence[float], window: int) -> list[float]:
    """Means of all length-``window`` runs of ``values``; one mean of all if shorter."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive integer, got {window!r}")
    n = len(values)
    if n == 0:
        raise ValueError("no tokens: cannot compute a rolling NLL of an empty reply")
    if n <= window:
        return [math.fsum(values) / n]
    prefix = [0.0]
    for v in values:
        prefix.append(prefix[-1] + v)
    return [(prefix[i + window] - prefix[i]) / window for i in range(n - window + 1)]


@dataclass(frozen=True, slots=True)
class ReplyStats:
    """One reply: its per-token NLL, rolling curve, mean and maximum window."""

    text: str
    nll: tuple[float, ...]
    rolling: tuple[float, ...]
    mean: float
    max_window: float

    @property
    def tokens(self) -> int:
        return len(self.nll)


def reply_stats(text: str, logprobs: Sequence[float], window: int) -> ReplyStats:
    """Statistics of a reply from its token logprobs."""
    nll = tuple(-float(lp) for lp in logprobs)
    bad = [x for x in nll if not math.isfinite(x)]
    if bad:
        raise ValueError(f"non-finite logprob in reply: {bad[0]!r}")
    rolling = tuple(rolling_mean(nll, window))
    return ReplyStats(text, nll, rolling, math.fsum(nll) / len(nll), max(rolling))


@dataclass(frozen=True, slots=True)
class CaseResult:
    """One conversation under both conditions and the differences (B - A)."""

    case: str
    control: bool
    fact_types: tuple[str, ...]
    full: ReplyStats
    gist: ReplyStats

    @property
    def delta_mean(self) -> float:
        """Mean per-token NLL, gist minus full."""
        return self.gist.mean - self.full.mean

    @property
    def delta_max(self) -> float:
        """Maximum rolling-window NLL, gist minus full."""
        return self.gist.max_window - self.full.max_window


@dataclass(frozen=True, slots=True)
class NllSummary:
    """Means over the experimental cases beside the control's values."""

    experimental_delta_mean: float
    experimental_delta_max: float
    control_delta_mean: float | None
    control_delta_max: float | None
    experimental_cases: int
    gist_lower_cases: int  # experimental cases where gist NLL < full NLL (against the hypothesis)


def summarise(cases: Sequence[CaseResult]) -> NllSummary:
    """Mean deltas of the experimental cases and the control's deltas (mean over controls)."""
    exp = [c for c in cases if not c.control]
    ctl = [c for c in cases if c.control]
    if not exp:
        raise ValueError("no experimental case")

    def mean(xs: list[float]) -> float:
        return math.fsum(xs) / len(xs)

    return NllSummary(
        mean([c.delta_mean for c in exp]), mean([c.delta_max for c in exp]),
        mean([c.delta_mean for c in ctl]) if ctl else None,
        mean([c.delta_max for c in ctl]) if ctl else None,
        len(exp), sum(c.delta_mean < 0 for c in exp),
    )
