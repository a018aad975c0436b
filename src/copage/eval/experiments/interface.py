"""The experiment interface shared by every ``copage bench`` experiment.

An experiment reads datasets (and a model when it needs one) and writes its rows
into a run directory; the report step turns rows into tables, plots and HTML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from copage.eval.datasets.probes import Dataset


@dataclass(frozen=True, slots=True)
class PagingSettings:
    """Paging options shared with ``copage simulate`` (comma lists already split)."""

    boundary: Sequence[str] = ("fixed_5", "fixed_10", "fixed_20", "topic_shift", "segment")
    policy: Sequence[str] = ("fifo", "lru", "lfu", "belady", "lrfu", "adaptive", "query")
    k: Sequence[int] = (5,)
    keywords: Sequence[str] = ("heuristic",)
    format: Sequence[str] = ("minimal",)
    placement: str = "end"
    order: str = "shuffled"


@dataclass(slots=True)
class BenchContext:
    """Everything an experiment may use. ``model``/``judges`` are ChatModel objects or None.

    ``out`` is the run directory; an experiment writes under ``out / name``.
    ``probes`` caps probes per dataset (seeded sample) when not None.
    """

    datasets: Sequence[Dataset]
    out: Path
    seed: int = 0
    model: Any | None = None
    model_spec: str | None = None
    judges: Mapping[str, Any] = field(default_factory=dict)
    probes: int | None = None
    methods: Sequence[str] | None = None
    paging: PagingSettings = field(default_factory=PagingSettings)
    progress: Any | None = None  # a Progress object (copage.eval.progress) or None
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ExperimentResult:
    """Rows (list of flat dicts) per table name, and figure paths."""

    name: str
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    figures: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


class Experiment(Protocol):
    """A named experiment. ``needs_model``: skipped (with a note) when no model is given."""

    name: str
    needs_model: bool
    description: str

    def run(self, ctx: BenchContext) -> ExperimentResult: ...
