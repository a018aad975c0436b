"""``main``: the six methods and copage's variants (paper Tables 4-5), at one token budget.

LLM-free, every method at ``budget`` tokens (``docs/benchmark-methods.md``):
evidence coverage (all / any evidence group inside the prompt, tool methods after
their reference reader's one call, which never sees the gold evidence), prompt
tokens, how much of the budget was spent and why not more; and the same at
:data:`BUDGETS` (the coverage-vs-tokens curves). With a model: answers
(``out/main/probes.jsonl``, resumable, keyed by the settings' fingerprint), LoCoMo
F1, exact match on synthetic data, the judges, recall metrics, breakdowns by
category and fact type, paired bootstrap and McNemar against ``bookmark_recall``,
and the failure analysis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from copage.eval.experiments.common import (
    cached,
    is_synthetic,
    judges_for,
    sample_probes,
    settings_for,
)
from copage.eval.experiments.interface import BenchContext, ExperimentResult
from copage.eval.experiments.leader import leaders, wanted
from copage.eval.jsonsafe import dumps
from copage.eval.methods import (
    COPAGE_VARIANTS,
    DEFAULT_BUDGET,
    DEFAULT_UNITS,
    PAPER_METHODS,
    MethodSettings,
    coverage,
    evidence_groups,
    get_method,
    method_names,
    page_baselines,
)
from copage.eval.methods.readers import DEFAULT_TRIGGER, TRIGGERS
from copage.eval.methods.templates import config_id
from copage.eval.runner import ProbeLog, ProbeTask, base_row, failures, row_key, run_tasks_sync
from copage.eval.runner.aggregate import GROUP, significance, table
from copage.eval.scoring import CATEGORY_NOTE

DEFAULT_METHODS: tuple[str, ...] = (PAPER_METHODS + COPAGE_VARIANTS
                                    + tuple(page_baselines(DEFAULT_UNITS)))
"""The paper's rows, copage's variants, and every retrieval baseline over copage's pages
(and finer ones) behind copage's resident window (:mod:`copage.eval.methods.pages`)."""


def default_methods(units: Sequence[str] | None = None) -> list[str]:
    """:data:`DEFAULT_METHODS`, the page baselines over ``units`` instead of
    :data:`~copage.eval.methods.DEFAULT_UNITS` when given."""
    if units is None:
        return list(DEFAULT_METHODS)
    return [*PAPER_METHODS, *COPAGE_VARIANTS, *page_baselines(tuple(units))]

BUDGETS: tuple[int, ...] = (1024, 2048, 4096, 8192)
"""The budgets of the coverage-vs-tokens curves (``main``'s ``budget_curves`` table)."""

HEADLINE_NOTE = (
    "evidence_coverage (every evidence group inside the prompt) is the headline: it is the "
    "condition under which the answer can be read off the prompt, and multi-hop LoCoMo "
    "questions need all their evidence turns; evidence_coverage_any (at least one group) is "
    "the lenient bound beside it. On synthetic data a planted fact's statements and the "
    "assistant's acknowledgements of them form one group, so the two coincide there."
)
NO_LEADER = ("no leader sentence: the comparison needs bookmark_recall+copage and a BM25 "
             "baseline (bm25 or bm25@<units>) among the methods")
SPEND = 0.9
"""A method whose prompts average less than this share of the budget says why."""


def method_config(method: Any, settings: MethodSettings) -> str:
    """The ``config`` key field of a method's rows: the settings that change its prompt
    (the bookmark methods' variant adds its recall mode, prompt style and the session
    templates; the other methods ignore the prompt style, so their rows stay valid
    across styles)."""
    values = asdict(settings)
    variant = getattr(method, "variant", None)
    if variant is None:
        values.pop("prompt_style", None)
        return config_id(values)
    return config_id({**values, **variant.config(settings)})


def build_tasks(ctx: BenchContext, methods: list[str], budget: int | None = None,
                tick: Callable[[], None] | None = None,
                ) -> tuple[list[ProbeTask], list[dict[str, Any]], list[str]]:
    """Prepare every (dataset, method, conversation); LLM-free rows; notes on settings.

    ``budget`` overrides the context's token budget (the curves); ``tick`` is called
    after each (dataset, method).
    """
    tasks: list[ProbeTask] = []
    free: list[dict[str, Any]] = []
    notes: list[str] = []
    for ds in ctx.datasets:
        settings = settings_for(ds, ctx)
        if budget is not None:
            settings = replace(settings, budget=budget)
        notes.append(f"{ds.name}: budget={settings.budget} tokens, boundary={settings.boundary}, "
                     f"policy={settings.policy}, keywords={settings.keywords}, "
                     f"window={settings.window}, full_window={settings.full_window}, "
                     f"top_k={settings.top_k}")
        if ctx.options.get("categories"):
            notes.append(f"{ds.name}: probes of LoCoMo categories "
                         f"{', '.join(map(str, ctx.options['categories']))} only "
                         f"({ds.probes} probes), sampled after the filter")
        pairs = sample_probes(ds, ctx.probes, ctx.seed)
        # Group by conversation (stable): consecutive calls then share their prompt
        # prefix, which a local server's prompt cache reuses. Results do not change.
        order = {c.id: i for i, c in enumerate(ds.conversations)}
        pairs = sorted(pairs, key=lambda cp: order[cp[0].id])
        synthetic = is_synthetic(ds)
        for name in methods:
            method = get_method(name)
            config = method_config(method, settings)
            prepared: dict[str, Any] = {}
            for conv, probe in pairs:
                if conv.id not in prepared:
                    prepared[conv.id] = method.prepare(conv, settings)
                prep = prepared[conv.id]
                groups = evidence_groups(conv, probe, acknowledgements=synthetic)
                triggers = TRIGGERS if method.uses_bookmarks else (None,)
                for trigger in triggers:
                    built = prep.build(probe, trigger) if trigger else prep.build(probe)
                    task = ProbeTask(ds.name, name, prep, probe, synthetic, built,
                                     method.uses_bookmarks, groups, config)
                    if trigger in (None, DEFAULT_TRIGGER):
                        tasks.append(task)
                    free.append(free_row(task, built, settings.budget, trigger))
            for conv_id, prep in prepared.items():
                for what in getattr(prep, "shrink", ()):
                    notes.append(f"{ds.name}/{name}/{conv_id} at {settings.budget} tokens: {what}")
            if tick is not None:
                tick()
    return tasks, free, notes


def free_row(task: ProbeTask, built: Any, budget: int, trigger: str | None) -> dict[str, Any]:
    """The LLM-free row of one probe under one trigger: coverage, billed tokens by call
    and by part, and why the prompt stops where it does. A probe that does not fit has
    coverage 0 (a miss)."""
    groups = task.groups if task.groups is not None else task.probe
    cov = coverage(groups, built.context_turn_ids)
    return {**base_row(task, None), "trigger": trigger, "budget": budget,
            "evidence_coverage": cov.all, "evidence_coverage_any": cov.any,
            "prompt_tokens": built.prompt_tokens, "call_tokens": list(built.calls),
            "parts": dict(built.parts), "limit": built.limit,
            "does_not_fit": bool(built.limit and built.limit.startswith("does not fit")),
            "needed": list(built.needed), "evicted_needed": list(built.evicted_needed),
            "routed": built.routed, "routing": built.routing, "would_need": built.would_need}


def spend_notes(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per (dataset, method, budget) whose prompts stay well below the budget, or
    go over it: why."""
    out = []
    for r in rows:
        spent = r.get("budget_spent")
        if r.get("over_budget"):
            out.append(f"{r['dataset']}/{r['method']} at {r['budget']} tokens: cannot stay within "
                       f"the budget on {r['over_budget']} of {r['probes']} probes (up to "
                       f"{r.get('prompt_tokens_max')} tokens; {r.get('limit_main')}); its rows count "
                       "the tokens it really used")
        elif spent is not None and spent < SPEND:
            why = r.get("limit_main") or "its rule stops before the budget"
            out.append(f"{r['dataset']}/{r['method']} at {r['budget']} tokens: spends "
                       f"{spent:.0%} of the budget ({why})")
    return out


def budget_curves(ctx: BenchContext, methods: list[str], budgets: Sequence[int],
                  done: dict[int, list[dict[str, Any]]],
                  tick: Callable[[], None] | None = None,
                  keep: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Coverage and tokens per (dataset, method, budget): the coverage-vs-tokens curves.

    ``keep`` receives the per-probe rows the leader comparison reads
    (:func:`copage.eval.experiments.leader.wanted`)."""
    rows: list[dict[str, Any]] = []
    for b in sorted(budgets):
        free = done[b] if b in done else build_tasks(ctx, methods, b, tick)[1]
        if keep is not None:
            keep += [r for r in free if wanted(r)]
        rows += table(free, ("dataset", "method", "trigger", "budget"))
    return rows


class MainExperiment:
    """The method comparison (see the module docstring)."""

    name = "main"
    needs_model = False
    description = "six methods + copage variants at one token budget: coverage, tokens, curves; " \
                  "with a model, scores"

    def run(self, ctx: BenchContext) -> ExperimentResult:
        """Run the LLM-free part (and its budget curves), and the model part when ``ctx.model`` is set."""
        methods = method_names(",".join(ctx.methods)) if ctx.methods else \
            default_methods(ctx.options.get("units"))
        out = ctx.out / self.name
        out.mkdir(parents=True, exist_ok=True)
        budget = int(ctx.options.get("budget", DEFAULT_BUDGET))
        budgets = list(dict.fromkeys([budget, *ctx.options.get("budgets", BUDGETS)]))
        prog = ctx.progress
        bar = prog.start("main (LLM-free)", len(budgets) * len(ctx.datasets) * len(methods)) \
            if prog is not None else None

        def tick() -> None:
            if prog is not None and bar is not None:
                prog.advance(bar)

        tasks, free, notes = build_tasks(ctx, methods, budget, tick)
        with (out / "llm_free.jsonl").open("w", encoding="utf-8") as f:
            for r in free:
                f.write(dumps(r, sort_keys=True) + "\n")
        curves_done = {budget: free}
        compared: list[dict[str, Any]] = []
        curves = budget_curves(ctx, methods, budgets, curves_done, tick, compared)
        lead = leaders(compared, B=int(ctx.options.get("bootstrap_b", 10_000)), seed=ctx.seed)
        if prog is not None and bar is not None:
            prog.finish(bar)
        rows: list[dict[str, Any]] = list(free)
        if ctx.model is not None:
            model = cached(ctx.model, ctx.options)
            name = ctx.model_spec or ctx.model.spec
            judges, jnotes = judges_for(ctx, model)
            notes += jnotes
            log = ProbeLog(out / "probes.jsonl")
            stats = run_tasks_sync(tasks, model, log, judges=judges, model_name=name,
                                   concurrency=int(ctx.options.get("concurrency", 4)),
                                   judge_max_tokens=int(ctx.options.get("judge_max_tokens", 200)),
                                   progress=prog, label="main (model)")
            notes.append(f"model run: {stats.written} probes answered, {stats.skipped} already "
                         f"in {log.path.name} for these settings, {stats.rejudged} judged again "
                         f"(a requested judge's verdict was missing), {stats.errors} answer errors")
            wanted = {row_key(base_row(t, name)) for t in tasks}
            rows += [r for r in log if row_key(r) in wanted]
        notes[:0] = [r["sentence"] for r in lead] or [NO_LEADER]
        notes.append(HEADLINE_NOTE)
        notes.append(CATEGORY_NOTE)
        methods_table = table(rows, (*GROUP, "trigger"))
        notes += spend_notes([r for r in curves if r.get("budget") != budget])
        notes += spend_notes([{**r, "budget": budget} for r in methods_table if r.get("model") is None])
        one = [r for r in rows if r.get("trigger") in (None, DEFAULT_TRIGGER, "model")]
        sig = significance(one, ("bookmark_recall", "bm25"), B=int(ctx.options.get("bootstrap_b", 10_000)), seed=ctx.seed)
        notes += sorted({f"{r['dataset']}/{r['method_b']}: {w}" for r in sig
                         for w in (r.get("conversation_warning"), r.get("probe_warning")) if w})
        tables = {
            "leader": lead,
            "methods": methods_table,
            "budget_curves": curves,
            "by_category": table(rows, (*GROUP, "trigger", "category", "category_name")),
            "by_fact_type": table([r for r in rows if r.get("fact_type")],
                                  (*GROUP, "trigger", "fact_type")),
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
    from copage.eval.experiments.common import load_bench_dataset

    ctx = BenchContext(datasets=[load_bench_dataset(dataset)], out=out, model=model, model_spec=spec,
                       probes=probes, methods=list(methods),
                       options={"concurrency": 1, "bootstrap_b": 1000, "budgets": (), **options})
    return EXPERIMENT.run(ctx)
