"""Statistics for benchmark results: intervals, paired tests, correlation, agreement.

Every random function takes its seed; each algorithm cites its source.
"""

from __future__ import annotations

from copage.eval.stats.bootstrap import MIN_CLUSTERS, BootstrapResult, paired_bootstrap
from copage.eval.stats.correlation import pearson, rankdata, spearman
from copage.eval.stats.intervals import Interval, wilson_interval, z_value
from copage.eval.stats.judges import MultiJudgeSummary, PairAgreement, multi_judge_summary
from copage.eval.stats.krippendorff import LEVELS, krippendorff_alpha
from copage.eval.stats.mcnemar import McNemarResult, binom_two_sided_half, mcnemar_exact

__all__ = [
    "LEVELS",
    "MIN_CLUSTERS",
    "BootstrapResult",
    "Interval",
    "McNemarResult",
    "MultiJudgeSummary",
    "PairAgreement",
    "binom_two_sided_half",
    "krippendorff_alpha",
    "mcnemar_exact",
    "multi_judge_summary",
    "paired_bootstrap",
    "pearson",
    "rankdata",
    "spearman",
    "wilson_interval",
    "z_value",
]
