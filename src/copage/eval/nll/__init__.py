"""The NLL fault-detection experiment (paper section 3, a negative result).

Does per-token NLL spike when the model lacks evicted context? Five
conversations (four with planted critical facts, one control) are answered with
the full context (A) and with a gist-compressed context (B); see ``docs/nll.md``.
"""

from copage.eval.nll.cases import CASES, FACT_TYPES, Exchange, NllCase
from copage.eval.nll.nll_runner import (
    DEFAULT_MAX_TOKENS,
    NllError,
    NllResult,
    run_nll,
    run_nll_async,
)
from copage.eval.nll.nll_stats import (
    DEFAULT_WINDOW,
    CaseResult,
    NllSummary,
    ReplyStats,
    reply_stats,
    rolling_mean,
    summarise,
)

__all__ = [
    "CASES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_WINDOW",
    "FACT_TYPES",
    "CaseResult",
    "Exchange",
    "NllCase",
    "NllError",
    "NllResult",
    "NllSummary",
    "ReplyStats",
    "reply_stats",
    "rolling_mean",
    "run_nll",
    "run_nll_async",
    "summarise",
]
