"""``main``: the six methods and copage's variants (paper Tables 4-5).

LLM-free, every method: evidence coverage (all / any evidence turn inside the
prompt, bookmark methods after the reference reader's one recall) and prompt
tokens. With a model: answers (``out/main/probes.jsonl``, resumable), LoCoMo F1,
exact match on synthetic data, the judges, recall metrics, breakdowns by
category and fact type, paired bootstrap and McNemar against ``bookmark_recall``,
and the failure analysis.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from copage.eval.experiments.base import BenchContext, ExperimentResult
from copage.eval.experiments.common import (
    cached,
    is_synthetic,
    judges_for,
    sample_probes,
    settings_for,
)
from copage.eval.methods import COPAGE_VARIANTS, PAPER_METHODS, coverage, get_method, method_names
from copage.eval.runner import ProbeLog, ProbeTask, base_row, failures, row_key, run_tasks_sync
from copage.eval.runner.aggregate import GROUP, significance, table
from copage.eval.scoring import CATEGORY_NOTE

DEFAULT_METHODS: tuple[str, ...] = PAPER_METHODS + COPAGE_VARIANTS


def build_tasks(ctx: BenchContext, methods: list[str]) -> tuple[list[ProbeTask], list[dict[str, Any]], list[str]]:
    """Prepare every (dataset, method, conversation); LLM-free rows; notes on settings."""
    tasks: list[ProbeTask] = []
    free: list[dict[str, Any]] = []
    notes: list[str] = []
    for ds in ctx.datasets:
        settings = settings_for(ds, ctx)
        notes.append(f"{ds.name}: boundary={settings.boundary}, resident_pages="
                     f"{settings.resident_pages}, policy={settings.policy}, window="
                     f"{settings.window}, full_window={settings.full_window}, top_k={settings.top_k}")
        pairs = sample_probes(ds, ctx.probes, ctx.seed)
        # Group by conversation (stable): consecutive calls then share their prompt
        # prefix, which a local server's prompt cache reuses. Results do not change.
        order = {c.id: i for i, c in enumerate(ds.conversations)}
        pairs = sorted(pairs, key=lambda cp: order[cp[0].id])
        synthetic = is_synthetic(ds)
        for name in methods:
            method = get_method(name)
            prepared: dict[str, Any] = {}
            for conv, probe in pairs:
                if conv.id not in prepared:
                    prepared[conv.id] = method.prepare(conv, settings)
                prep = prepared[conv.id]
                built = prep.build(probe)
                task = ProbeTask(ds.name, name, prep, probe, synthetic, built, method.uses_bookmarks)
                tasks.append(task)
                cov = coverage(probe, built.context_turn_ids)
                free.append({**base_row(task, None), "evidence_coverage": cov.all,
                             "evidence_coverage_any": cov.any, "prompt_tokens": built.prompt_tokens,
                             "needed": list(built.needed), "evicted_needed": list(built.evicted_needed),
                             "routed": built.routed, "routing": built.routing})
    return tasks, free, notes


class MainExperiment:
    """The method comparison (see the module docstring)."""

    name = "main"
    needs_model = False
    description = "six methods + copage variants: evidence coverage, tokens; with a model, scores"

    def run(self, ctx: BenchContext) -> ExperimentResult:
        """Run the LLM-free part, and the model part when ``ctx.model`` is set."""
        methods = method_names(",".join(ctx.methods)) if ctx.methods else list(DEFAULT_METHODS)
        out = ctx.out / self.name
        out.mkdir(parents=True, exist_ok=True)
        tasks, free, notes = build_tasks(ctx, methods)
        with (out / "llm_free.jsonl").open("w", encoding="utf-8") as f:
            for r in free:
                f.write(json.dumps(r, sort_keys=True) + "\n")
        rows: list[dict[str, Any]] = list(free)
        if ctx.model is not None:
            model = cached(ctx.model, ctx.options)
            name = ctx.model_spec or ctx.model.spec
            judges, jnotes = judges_for(ctx, model)
            notes += jnotes
            log = ProbeLog(out / "probes.jsonl")
            stats = run_tasks_sync(tasks, model, log, judges=judges, model_name=name,
                                   concurrency=int(ctx.options.get("concurrency", 4)),
                                   judge_max_tokens=int(ctx.options.get("judge_max_tokens", 200)))
            notes.append(f"model run: {stats.written} probes answered, {stats.skipped} already "
                         f"in {log.path.name}, {stats.errors} answer errors")
            wanted = {row_key(base_row(t, name)) for t in tasks}
            rows += [r for r in log if row_key(r) in wanted]
        notes.append(CATEGORY_NOTE)
        sig = significance(rows, B=int(ctx.options.get("bootstrap_b", 10_000)), seed=ctx.seed)
        notes += sorted({f"{r['dataset']}/{r['method_b']}: {w}" for r in sig
                         for w in (r.get("conversation_warning"), r.get("probe_warning")) if w})
        tables = {
            "methods": table(rows, GROUP),
            "by_category": table(rows, (*GROUP, "category", "category_name")),
            "by_fact_type": table([r for r in rows if r.get("fact_type")], (*GROUP, "fact_type")),
            "significance": sig,
            "failures": failures(rows),
        }
        return ExperimentResult(self.name, tables, [], notes)


EXPERIMENT = MainExperiment()


def smoke(model: Any, out: Path, *, spec: str | None = None, dataset: str = "controlled",
          probes: int = 3, methods: tuple[str, ...] = ("full_context", "truncation", "bookmark_recall"),
          **options: Any) -> ExperimentResult:
    """Run ``main`` on a few probes of one dataset with ``model`` (the CI check with a real model).

    The answering model is also the judge; options (``max_tokens``, ``cache_path``,
    ``concurrency``, ...) go to :class:`BenchContext`'s ``options``.
    """
    from copage.eval.datasets import load_dataset

    ctx = BenchContext(datasets=[load_dataset(dataset)], out=out, model=model, model_spec=spec,
                       probes=probes, methods=list(methods),
                       options={"concurrency": 1, "bootstrap_b": 1000, **options})
    return EXPERIMENT.run(ctx)
