"""The result of one NLL experiment run (shared by the runner and the report writer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from copage.eval.nll.nll_stats import CaseResult, NllSummary


@dataclass(frozen=True, slots=True)
class NllResult:
    """Results of one run: the model, settings, per-case results, summary and files written."""

    model: str
    window: int
    max_tokens: int
    temperature: float
    cases: tuple[CaseResult, ...]
    summary: NllSummary
    files: dict[str, Path] = field(default_factory=dict)

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per case (the CSV table)."""
        return [
            {
                "case": c.case, "kind": "control" if c.control else "experimental",
                "fact_types": "+".join(c.fact_types) or "-",
                "tokens_full": c.full.tokens, "tokens_gist": c.gist.tokens,
                "mean_nll_full": c.full.mean, "mean_nll_gist": c.gist.mean,
                "delta_mean_nll": c.delta_mean,
                "max_window_full": c.full.max_window, "max_window_gist": c.gist.max_window,
                "delta_max_window": c.delta_max, "model": self.model,
            }
            for c in self.cases
        ]
