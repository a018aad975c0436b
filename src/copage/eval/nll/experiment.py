"""The ``nll`` experiment of ``copage bench``."""

from __future__ import annotations

from dataclasses import asdict

from copage.eval.experiments.interface import BenchContext, ExperimentResult
from copage.eval.nll.nll_runner import DEFAULT_MAX_TOKENS, NllError, run_nll
from copage.eval.nll.nll_stats import DEFAULT_WINDOW


class NllExperiment:
    """Per-token NLL under full vs gist-compressed context (paper section 3).

    Options read from ``ctx.options``: ``nll_window`` (default 32) and
    ``nll_max_tokens`` (default 256).
    """

    name = "nll"
    needs_model = True
    description = "NLL fault detection: full vs gist context, rolling NLL (w=32)"

    def run(self, ctx: BenchContext) -> ExperimentResult:
        """Run with ``ctx.model``; write under ``ctx.out / "nll"``."""
        if ctx.model is None:
            raise ValueError("the nll experiment needs a model (--model)")
        try:
            result = run_nll(
                ctx.model, ctx.out / self.name,
                int(ctx.options.get("nll_window", DEFAULT_WINDOW)),
                max_tokens=int(ctx.options.get("nll_max_tokens", DEFAULT_MAX_TOKENS)),
            )
        except NllError as e:  # e.g. a model without logprobs: the other experiments go on
            return ExperimentResult(name=self.name, notes=[f"nll not run: {e}"])
        summary = {"model": result.model, "window": result.window, **asdict(result.summary)}
        return ExperimentResult(
            name=self.name,
            tables={"nll": result.rows(), "nll_summary": [summary]},
            figures=[p for k, p in result.files.items() if k == "plot"],
            notes=[f"produced by model {result.model}"],
        )


EXPERIMENT = NllExperiment()
"""The instance ``copage bench`` discovers."""
