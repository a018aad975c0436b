"""Evaluation: datasets, methods, scorers, statistics, experiments, reports.

Nothing in the library imports this package.
"""

from copage.eval.scoring import locomo_f1

__all__ = ["locomo_f1"]
