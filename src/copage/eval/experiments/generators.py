"""``generators``: keyword generators at fixed_10 + LRU, k=5 (paper Table 13) and fixed_5 (Appendix B).

Offline generators always (routing_top1, bookmark tokens, LLM-free); with a model,
accuracy, trigger rate and recall precision per generator. The LLM generators
(``llm-contextual``, ``llm-batch``, ``hybrid``, ``auto``) join when a model is given,
bound to it in this run's own registry (``with_llm_extractors``; the global
``EXTRACTORS`` is not changed).
"""

from __future__ import annotations

from copage.core.keywords import EXTRACTORS, KeywordExtractor
from copage.core.registry import Registry
from copage.eval.experiments.grid import fixed_cell, study
from copage.eval.experiments.interface import BenchContext, ExperimentResult

OFFLINE = ("random", "heuristic", "tfidf", "discriminative", "generic")
LLM = ("llm-contextual", "llm-batch", "hybrid", "auto")


def generator_names(has_model: bool, extractors: Registry[KeywordExtractor] = EXTRACTORS,
                    ) -> tuple[list[str], list[str]]:
    """(generators to run, notes): offline ones, plus LLM ones in ``extractors`` with a model."""
    names = [n for n in OFFLINE if n in extractors]
    notes = []
    llm = [n for n in LLM if n in extractors]
    if has_model and llm:
        names += llm
    elif llm:
        notes.append("LLM generators " + ", ".join(llm) + " need --model: not run")
    missing = [n for n in LLM if n not in extractors]
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
        extractors = EXTRACTORS
        if ctx.model is not None:
            # The LLM generators call the answering model (through the response cache):
            # this run's extractors are the global ones plus them (the global ones unchanged).
            from copage.eval.experiments.common import cached
            from copage.eval.llmkeywords import with_llm_extractors

            extractors = with_llm_extractors(cached(ctx.model, ctx.options))
        names, notes = generator_names(ctx.model is not None, extractors)
        cells = [fixed_cell(ctx, boundary=b, keywords=k) for b in ("fixed_10", "fixed_5")
                 for k in names]
        cells = list(dict.fromkeys(cells))
        rows, mnotes = study(ctx, self.name, cells, extractors=extractors)
        return ExperimentResult(self.name, {"generators": rows}, [], notes + mnotes)


EXPERIMENT = GeneratorsExperiment()
