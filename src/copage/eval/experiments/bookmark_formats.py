"""``formats``: bookmark formats (paper Table 11, Figure 7).

Per format at one setting (fixed_10 + LRU, k=5 unless ``--boundary``/``--policy``
say otherwise): tokens per bookmark and routing_top1 (LLM-free); with a model,
accuracy, trigger rate and right-page rate. The paper's information-gap
hypothesis (longer bookmarks suppress recall) is a claim about trigger rate,
which only a model can show; routing_top1 only says whether the words of a
format let the question find its page.
"""

from __future__ import annotations

from copage.core.bookmarks import FORMATS
from copage.eval.experiments.grid import fixed_cell, study
from copage.eval.experiments.interface import BenchContext, ExperimentResult, PagingSettings


class FormatsExperiment:
    """Bookmark formats (see the module docstring)."""

    name = "formats"
    needs_model = False
    description = "bookmark formats: tokens per bookmark, routing; with a model, accuracy, trigger rate"

    def run(self, ctx: BenchContext) -> ExperimentResult:
        """One cell per format on every dataset."""
        given = tuple(ctx.paging.format)
        names = list(given) if given != tuple(PagingSettings().format) else FORMATS.names()
        cells = [fixed_cell(ctx, fmt=f) for f in names]
        rows, notes = study(ctx, self.name, cells)
        notes.append(f"setting: {cells[0].boundary} + {cells[0].policy}, k={cells[0].k}, "
                     f"keywords {cells[0].keywords}; the information-gap hypothesis concerns "
                     "trigger_rate (model runs only)")
        return ExperimentResult(self.name, {"formats": rows}, [], notes)


EXPERIMENT = FormatsExperiment()
