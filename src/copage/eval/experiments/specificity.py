"""``specificity``: category labels vs specific keywords (paper Table 12).

The ``generic`` extractor (:mod:`copage.core.keywords.generic`) names what kind
of information a page holds ("medical information", "budget and money"); the
others name the information itself. Rows per extractor (LLM-free routing_top1,
with a model accuracy and trigger rate) and per extractor x fact type (LoCoMo:
category, id beside its name), where the paper saw preference probes fail.
"""

from __future__ import annotations

from typing import Any

from copage.eval.experiments.grid import (
    breakdown,
    datasets_of,
    fixed_cell,
    for_dataset,
    probe_outcomes,
    study,
)
from copage.eval.experiments.interface import BenchContext, ExperimentResult

EXTRACTORS_COMPARED = ("generic", "heuristic", "tfidf", "discriminative")


class SpecificityExperiment:
    """Keyword specificity (see the module docstring)."""

    name = "specificity"
    needs_model = False
    description = "generic category labels vs specific keywords: routing by fact type"

    def run(self, ctx: BenchContext) -> ExperimentResult:
        """One cell per extractor; per-type routing from per-probe outcomes."""
        cells = [fixed_cell(ctx, keywords=k) for k in EXTRACTORS_COMPARED]
        rows, notes = study(ctx, self.name, cells)
        per_probe: list[dict[str, Any]] = []
        for ds in datasets_of(ctx):
            for cell in cells:
                per_probe += [{**r, "keywords": cell.keywords}
                              for r in probe_outcomes(ds, for_dataset(ctx, ds, cell))]
        notes.append("generic = offline category labels (copage.core.keywords.generic), the "
                     "paper's 'personal preferences'-style bookmarks")
        return ExperimentResult(self.name, {"specificity": rows,
                                            "specificity_by_type": breakdown(per_probe, ["keywords"])},
                                [], notes)


EXPERIMENT = SpecificityExperiment()
