"""Run experiments into a run directory, resuming finished ones (``copage bench``).

Each finished experiment leaves ``out/<name>/result.json`` (its tables, notes and
the settings fingerprint). Running again with the same ``--out`` and settings
loads it instead of running the experiment again; changed settings rerun it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from copage.eval.experiments.catalog import ORDER, Unavailable, get_experiment
from copage.eval.experiments.interface import BenchContext, ExperimentResult
from copage.eval.jsonsafe import clean, dumps

DEFAULT_SKIP = ("topology",)
"""Left out of the default list: ``paging`` already includes the topology rows."""


def settings_of(ctx: BenchContext) -> dict[str, Any]:
    """The settings that decide an experiment's result (its resume fingerprint)."""
    return {
        "datasets": [d.name for d in ctx.datasets], "seed": ctx.seed, "model": ctx.model_spec,
        "judges": sorted(ctx.judges), "probes": ctx.probes,
        "methods": list(ctx.methods) if ctx.methods else None,
        "paging": {k: list(v) if isinstance(v, (list, tuple)) else v
                   for k, v in asdict(ctx.paging).items()},
        "options": {k: v for k, v in sorted(ctx.options.items()) if k not in ("workers", "cache_path")},
    }


def default_names(has_model: bool) -> list[str]:
    """Every experiment that runs without a model (all of them with one), in run order."""
    names = []
    for name in ORDER:
        if name in DEFAULT_SKIP:
            continue
        if has_model or not get_experiment(name).needs_model:
            names.append(name)
    return names


def _load(path: Path, fingerprint: Mapping[str, Any]) -> ExperimentResult | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("settings") != clean(fingerprint):
        return None
    figures = [path.parent / f for f in data.get("figures", []) if (path.parent / f).exists()]
    return ExperimentResult(data["name"], data["tables"], figures, data["notes"])


def run_experiments(ctx: BenchContext, names: Sequence[str], *,
                    log: Any = None) -> list[ExperimentResult]:
    """Run (or resume) ``names`` in order; a model-only experiment without a model is skipped."""
    fingerprint = settings_of(ctx)
    results: list[ExperimentResult] = []
    for name in names:
        exp = get_experiment(name)
        path = ctx.out / name / "result.json"
        done = _load(path, fingerprint)
        if done is not None:
            done.notes.append(f"{name}: resumed from {path}")
            results.append(done)
            if log:
                log(f"{name}: already done ({path}), not run again")
            continue
        if exp.needs_model and ctx.model is None:
            results.append(ExperimentResult(name, notes=[f"{name}: skipped (needs --model)"]))
            continue
        t0 = time.perf_counter()
        if log:
            log(f"{name}: {exp.description}")
        result = exp.run(ctx)
        elapsed = time.perf_counter() - t0
        result.notes.append(f"{name}: ran in {elapsed:.1f} s")
        if log:
            log(f"{name}: done in {elapsed:.1f} s")
        results.append(result)
        if isinstance(exp, Unavailable):
            continue  # not stored: it runs once the module is installed
        path.parent.mkdir(parents=True, exist_ok=True)
        figures = [_relative(f, path.parent) for f in result.figures]
        path.write_text(dumps({"name": name, "settings": fingerprint, "tables": result.tables,
                               "notes": result.notes, "figures": figures, "seconds": elapsed},
                              indent=1), encoding="utf-8")
    return results


def _relative(figure: Path, folder: Path) -> str:
    try:
        return str(Path(figure).resolve().relative_to(folder.resolve()))
    except ValueError:
        return str(Path(figure).resolve())


def finished(ctx: BenchContext, exclude: Sequence[str] = ()) -> list[ExperimentResult]:
    """Results already in ``ctx.out`` for the same settings (for a report of the whole run)."""
    fingerprint = settings_of(ctx)
    out = []
    for name in ORDER:
        if name in exclude:
            continue
        done = _load(ctx.out / name / "result.json", fingerprint)
        if done is not None:
            out.append(done)
    return out
