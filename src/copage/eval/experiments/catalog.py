"""The experiments of ``copage bench`` by name, imported only when chosen.

``main`` and ``judges`` live in their own modules; ``nll`` comes from
:mod:`copage.eval.nll.experiment` when installed. A module that cannot be imported yields an
:class:`Unavailable` experiment that reports "not available" instead of crashing.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from copage.core.registry import Registry
from copage.eval.experiments.interface import BenchContext, Experiment, ExperimentResult

ORDER: tuple[str, ...] = ("main", "judges", "paging", "topology", "formats", "specificity",
                          "generators", "selection", "failures", "nll")
"""Names in the order ``copage bench`` runs them."""

_MODULES: dict[str, str] = {
    "main": "copage.eval.experiments.methods_table",
    "judges": "copage.eval.experiments.multi_judge",
    "paging": "copage.eval.experiments.paging",
    "topology": "copage.eval.experiments.topology",
    "formats": "copage.eval.experiments.bookmark_formats",
    "specificity": "copage.eval.experiments.specificity",
    "generators": "copage.eval.experiments.generators",
    "selection": "copage.eval.experiments.selection",
    "failures": "copage.eval.experiments.failures",
    "nll": "copage.eval.nll.experiment",
}


class Unavailable:
    """Stands in for an experiment whose module cannot be imported."""

    needs_model = False

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        self.description = f"not available ({reason})"

    def run(self, ctx: BenchContext) -> ExperimentResult:
        """Return an empty result whose note says why."""
        return ExperimentResult(self.name, notes=[f"{self.name}: not available: {self.reason}"])


def _loader(name: str, module: str) -> Callable[[], Experiment]:
    def load() -> Experiment:
        try:
            mod = importlib.import_module(module)
            exp: Experiment = mod.EXPERIMENT
        except (ImportError, AttributeError) as e:
            return Unavailable(name, f"{module}: {e}")
        return exp
    return load


EXPERIMENTS: Registry[Experiment] = Registry("experiment")
for _name in ORDER:
    EXPERIMENTS.register(_name, _loader(_name, _MODULES[_name]))


def get_experiment(name: str) -> Experiment:
    """The experiment called ``name``; raises ``UnknownNameError`` listing the valid names."""
    return EXPERIMENTS.create(name)
