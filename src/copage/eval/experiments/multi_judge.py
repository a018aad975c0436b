"""``judges``: the multi-judge check of the ranking (paper Table 6).

Answers are regenerated (``out/judges/probes.jsonl``, resumable) for a seeded sample
of ``judge_probes`` (100) probes per dataset with the three most competitive
methods (bookmark_recall, full_context, bm25), and every answer is scored by every
judge on the 1-5 scale (and the binary judge). Reported: per-judge means, the
cross-judge average, pairwise Pearson and Spearman, Krippendorff's alpha (ordinal),
and paired bootstrap on judge-averaged scores (bookmark_recall vs each method).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from copage.eval.experiments.common import cached, judges_for
from copage.eval.experiments.interface import BenchContext, ExperimentResult
from copage.eval.experiments.methods_table import build_tasks
from copage.eval.methods import COMPETITIVE, method_names
from copage.eval.runner import ProbeLog, base_row, row_key, run_tasks_sync
from copage.eval.runner.aggregate import group, judge_mean
from copage.eval.stats import multi_judge_summary, paired_bootstrap

Row = dict[str, Any]


def judge_tables(rows: list[Row], judges: list[str], *, B: int, seed: int) -> dict[str, list[Row]]:
    """Per-judge means, agreement and judge-averaged significance from answered rows."""
    means: list[Row] = []
    agreement: list[Row] = []
    sig: list[Row] = []
    for (dataset, model), grp in group(rows, ("dataset", "model")).items():
        for (method,), mrows in group(grp, ("method",)).items():
            for j in judges:
                vals = [r["judges"].get(j, {}).get("scale5", {}).get("score") for r in mrows]
                ok = [float(v) for v in vals if v is not None]
                means.append({"dataset": dataset, "model": model, "method": method, "judge": j,
                              "scale5_mean": sum(ok) / len(ok) if ok else None, "n": len(ok)})
            avg = [v for v in (judge_mean(r, "scale5") for r in mrows) if v is not None]
            means.append({"dataset": dataset, "model": model, "method": method,
                          "judge": "average", "scale5_mean": sum(avg) / len(avg) if avg else None,
                          "n": len(avg)})
        if len(judges) >= 2:
            summary = multi_judge_summary(
                {j: [r["judges"].get(j, {}).get("scale5", {}).get("score") for r in grp]
                 for j in judges})
            for p in summary.pairs:
                agreement.append({"dataset": dataset, "model": model, "judge_a": p.judge_a,
                                  "judge_b": p.judge_b, "n": p.n, "pearson": p.pearson,
                                  "spearman": p.spearman,
                                  "krippendorff_alpha_ordinal": summary.alpha_ordinal})
        by_method = group(grp, ("method",))
        ref = {r["probe"]: r for r in by_method.get(("bookmark_recall",), [])}
        for (method,), mrows in by_method.items():
            if method == "bookmark_recall" or not ref:
                continue
            trip = [(judge_mean(ref[r["probe"]], "scale5"), judge_mean(r, "scale5"), r["conversation"])
                    for r in mrows if r["probe"] in ref]
            trip = [t for t in trip if t[0] is not None and t[1] is not None]
            if not trip:
                continue
            a = [float(t[0]) for t in trip]  # type: ignore[arg-type]
            b = [float(t[1]) for t in trip]  # type: ignore[arg-type]
            row: Row = {"dataset": dataset, "model": model, "method_a": "bookmark_recall",
                        "method_b": method, "metric": "judge_average_scale5", "n": len(trip)}
            for unit, clusters in (("probe", None), ("conversation", [t[2] for t in trip])):
                res = paired_bootstrap(a, b, clusters=clusters, B=B, seed=seed)
                row.update({f"{unit}_delta": res.delta, f"{unit}_ci_low": res.ci_low,
                            f"{unit}_ci_high": res.ci_high, f"{unit}_p": res.p_value,
                            f"{unit}_clusters": res.n_clusters, f"{unit}_warning": res.warning})
            sig.append(row)
    return {"judges": means, "agreement": agreement, "significance": sig}


class JudgesExperiment:
    """Table 6 (see the module docstring)."""

    name = "judges"
    needs_model = True
    description = "answers for 100 probes x 3 methods scored by every judge; agreement"

    def run(self, ctx: BenchContext) -> ExperimentResult:
        """Regenerate answers and score them with every judge."""
        if ctx.model is None:
            return ExperimentResult(self.name, notes=["skipped: the judges experiment needs --model"])
        methods = method_names(",".join(ctx.methods)) if ctx.methods else list(COMPETITIVE)
        n = ctx.probes if ctx.probes is not None else int(ctx.options.get("judge_probes", 100))
        sub = dataclasses.replace(ctx, probes=n)
        tasks, _, notes = build_tasks(sub, methods)
        model = cached(ctx.model, ctx.options)
        name = ctx.model_spec or ctx.model.spec
        judges, jnotes = judges_for(ctx, model)
        notes += jnotes
        if len(judges) < 2:
            notes.append("fewer than two judges: no agreement statistics")
        out = ctx.out / self.name
        log = ProbeLog(out / "probes.jsonl")
        stats = run_tasks_sync(tasks, model, log, judges=judges, model_name=name,
                               concurrency=int(ctx.options.get("concurrency", 4)),
                               judge_max_tokens=int(ctx.options.get("judge_max_tokens", 200)),
                               progress=ctx.progress, label="judges (model)")
        notes.append(f"model run: {stats.written} probes answered, {stats.skipped} already in "
                     f"{log.path.name} for these settings, {stats.rejudged} judged again (a "
                     f"requested judge's verdict was missing), {stats.errors} answer errors")
        wanted = {row_key(base_row(t, name)) for t in tasks}
        rows = [r for r in log if row_key(r) in wanted]
        tables = judge_tables(rows, list(judges), B=int(ctx.options.get("bootstrap_b", 10_000)),
                              seed=ctx.seed)
        return ExperimentResult(self.name, tables, [], notes)


EXPERIMENT = JudgesExperiment()
