"""``generators``: keyword generators at fixed_10 + LRU, k=5 (paper Table 13) and fixed_5 (Appendix B).

Offline generators always (routing_top1, bookmark tokens, LLM-free); with a model,
accuracy, trigger rate and recall precision per generator. The LLM generators
(``llm-contextual``, ``llm-batch``, ``hybrid``, ``auto``) join when they are
registered as keyword extractors and a model is given.
"""

from __future__ import annotations

from copage.core.keywords import EXTRACTORS
from copage.eval.experiments.grid import fixed_cell, study
from copage.eval.experiments.interface import BenchContext, ExperimentResult

OFFLINE = ("random", "heuristic", "tfidf", "discriminative", "generic")
LLM = ("llm-contextual", "llm-batch", "hybrid", "auto")


def generator_names(has_model: bool) -> tuple[list[str], list[str]]:
    """(generators to run, notes): offline ones, plus registered LLM ones with a model."""
    names = [n for n in OFFLINE if n in EXTRACTORS]
    notes = []
    llm = [n for n in LLM if n in EXTRACTORS]
    if has_model and llm:
        names += llm
    elif llm:
        notes.append("LLM generators " + ", ".join(llm) + " need --model: not run")
    missing = [n for n in LLM if n not in EXTRACTORS]
    if missing:
        notes.append("LLM generators not available in this install: " + ", ".join(missing))
    return names, notes


class GeneratorsExperiment:
    """Keyword generators (see the module docstring)."""

    name = "generators"
    needs_model = False
    description = "keyword generators at fixed_10+LRU k=5 and fixed_5: routing, tokens"

    def run(self, ctx: BenchContext) -> ExperimentResult:
        """fixed_10 (Table 13) and fixed_5 (Appendix B) cells per generator."""
        added: list[str] = []
        if ctx.model is not None:
            # The LLM generators call the answering model (through the response cache);
            # they are registered for this run only.
            from copage.eval.experiments.common import cached
            from copage.eval.llmkeywords import register_llm_extractors

            added = [n for n in LLM if n not in EXTRACTORS]
            register_llm_extractors(cached(ctx.model, ctx.options))
        try:
            names, notes = generator_names(ctx.model is not None)
            cells = [fixed_cell(ctx, boundary=b, keywords=k) for b in ("fixed_10", "fixed_5")
                     for k in names]
            cells = list(dict.fromkeys(cells))
            rows, mnotes = study(ctx, self.name, cells)
        finally:
            for name in added:
                EXTRACTORS.unregister(name)
        return ExperimentResult(self.name, {"generators": rows}, [], notes + mnotes)


EXPERIMENT = GeneratorsExperiment()
