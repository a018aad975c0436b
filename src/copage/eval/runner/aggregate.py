"""Tables of the main experiment from per-probe rows: methods, breakdowns, significance, failures.

Accuracy of a probe: the primary (first) judge's binary verdict CORRECT; without a
judge, exact match on synthetic data. ``judge_scale5`` averages the 1-5 scores over
judges per probe first. Recall metrics use :mod:`copage.eval.runner.probe_metrics`.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from copage.eval.runner.probe_metrics import (
    Rate,
    recall_precision,
    right_page_rate,
    speculative_hit_rate,
    trigger_rate,
)
from copage.eval.stats import mcnemar_exact, paired_bootstrap, wilson_interval
from copage.session.records import ProbeRecord, RecallRecord

Row = dict[str, Any]
GROUP = ("dataset", "model", "method")


def _mean(xs: Iterable[float | None]) -> float | None:
    vals = [float(x) for x in xs if x is not None and not (isinstance(x, float) and math.isnan(x))]
    return sum(vals) / len(vals) if vals else None


def judge_mean(row: Row, kind: str) -> float | None:
    """The score of ``kind`` averaged over the row's judges (None without a verdict)."""
    return _mean(v.get(kind, {}).get("score") for v in (row.get("judges") or {}).values())


def correct(row: Row) -> bool | None:
    """Binary correctness: the primary judge's verdict, else exact match, else None."""
    judges = row.get("judges") or {}
    if judges:
        first = next(iter(judges.values()))
        score = first.get("binary", {}).get("score")
        if score is not None:
            return bool(score >= 0.5)
    em = (row.get("scores") or {}).get("exact_match")
    return None if em is None else bool(em)


def probe_record(row: Row) -> ProbeRecord:
    """A row as the loop's :class:`ProbeRecord` (for the shared recall metrics)."""
    recalls = tuple(
        RecallRecord(f"c{i}", str(c.get("tool", "")), str(c.get("arguments", "")),
                     str(c.get("status", "error")), c.get("page"))
        for i, c in enumerate(row.get("tool_calls") or ())
    )
    return ProbeRecord(tuple(row.get("needed_pages") or ()), tuple(row.get("evicted_needed") or ()),
                       tuple(row.get("speculative_pages") or ()), recalls)


def provider_tokens(row: Row) -> int | None:
    """The server's prompt tokens of a row, summed over its calls (None when it gave none)."""
    counts = [int(c) for c in row.get("provider_prompt_tokens") or () if c is not None]
    return sum(counts) if counts and any(counts) else None


def needed_paged_in_rate(records: Sequence[ProbeRecord]) -> Rate:
    """Share of probes with an evicted needed page in which some evicted needed page was
    paged in, by any step (speculative page-in, a choose pick, a recall call)."""
    pool = [r for r in records if r.evicted]
    hits = 0
    for r in pool:
        evicted = set(r.evicted)
        got = set(r.speculative) | {c.page for c in r.recalls if c.status == "paged_in"}
        hits += bool(got & evicted)
    return Rate(hits, len(pool))


def _tool_only(record: ProbeRecord) -> ProbeRecord:
    """``record`` without its ``choose`` picks (the trigger rate of the recall tool alone)."""
    return replace(record, recalls=tuple(c for c in record.recalls if c.tool != "choose"))


def _rate(value: float) -> float | None:
    return None if math.isnan(value) else value


def _acc(rows: Sequence[Row], prefix: str) -> Row:
    vals = [c for c in (correct(r) for r in rows) if c is not None]
    if not vals:
        return {}
    ci = wilson_interval(sum(vals), len(vals))
    return {prefix: sum(vals) / len(vals), f"{prefix}_ci_low": ci.low, f"{prefix}_ci_high": ci.high,
            f"{prefix}_n": len(vals)}


def summarise(rows: Sequence[Row]) -> Row:
    """The metrics of one group of rows (LLM-free rows have no ``answer``)."""
    out: Row = {
        "probes": len(rows),
        "evidence_coverage": _mean(float(r["evidence_coverage"]) for r in rows
                                   if r.get("evidence_coverage") is not None),
        "evidence_coverage_any": _mean(float(r["evidence_coverage_any"]) for r in rows
                                       if r.get("evidence_coverage_any") is not None),
    }
    units = Counter(str(r["units"]) for r in rows if r.get("units"))
    if units:  # one label per method, but a budget plan may use finer pages for one conversation
        (label, n), = units.most_common(1)
        out["units"] = label if n == len(rows) else f"{label} ({n} of {len(rows)} probes)"
    if rows and "answer" not in rows[0]:
        tokens = [int(r["prompt_tokens"]) for r in rows if r.get("prompt_tokens") is not None]
        out["prompt_tokens_mean"] = _mean(tokens)
        out["prompt_tokens_max"] = max(tokens) if tokens else None
        budgets = {int(r["budget"]) for r in rows if r.get("budget")}
        if len(budgets) == 1 and tokens:
            budget = next(iter(budgets))
            out["budget"] = budget
            out["budget_spent"] = sum(tokens) / len(tokens) / budget
            out["over_budget"] = sum(1 for t in tokens if t > budget)
            out["does_not_fit"] = sum(1 for r in rows if r.get("does_not_fit"))
            out.update(part_shares(rows, budget))
        wanted = [int(r["would_need"]) for r in rows if r.get("would_need") is not None]
        if wanted:  # calls not made (over the budget): what those probes would have billed
            out["would_need_mean"] = _mean(wanted)
            out["not_made"] = len(wanted)
        calls = [len(r["call_tokens"]) for r in rows if r.get("call_tokens")]
        if calls:
            out["calls_mean"] = _mean(calls)
            limits = Counter(str(r["limit"]) for r in rows if r.get("limit"))
            if limits:
                why, n = limits.most_common(1)[0]
                out["limit_main"] = f"{why}: {n} of {len(rows)} probes"
        routed = [r["routing"] for r in rows if r.get("routing") is not None]
        if routed:
            out["routing_top1"] = _mean(routed)
            out["faults"] = len(routed)
        return out
    out["prompt_tokens_mean"] = _mean(r.get("prompt_tokens_total") for r in rows)
    billed = [int(r["prompt_tokens_total"]) for r in rows if r.get("prompt_tokens_total") is not None]
    out["prompt_tokens_max"] = max(billed) if billed else None
    budgets = {int(r["budget"]) for r in rows if r.get("budget")}
    if len(budgets) == 1 and billed:
        out["budget"] = budget = next(iter(budgets))
        out["over_budget"] = sum(1 for t in billed if t > budget)
        out["budget_spent"] = sum(billed) / len(billed) / budget
        out.update(part_shares(rows, budget))
    out["does_not_fit"] = sum(1 for r in rows if r.get("does_not_fit"))
    out["provider_prompt_tokens_mean"] = _mean(provider_tokens(r) for r in rows)
    out["calls_mean"] = _mean(r.get("calls") for r in rows)
    out["cached_calls"] = sum(int(r.get("cached_calls") or 0) for r in rows)
    out["errors"] = sum(1 for r in rows if r.get("error"))
    out["locomo_f1"] = _mean((r.get("scores") or {}).get("locomo_f1") for r in rows)
    em = [(r.get("scores") or {}).get("exact_match") for r in rows]
    if any(e is not None for e in em):
        out["exact_match"] = _mean(em)
    out["judge_scale5"] = _mean(judge_mean(r, "scale5") for r in rows)
    out["judge_binary"] = _mean(judge_mean(r, "binary") for r in rows)
    out.update(_acc(rows, "accuracy"))
    if any(r.get("needed_pages") is not None and r.get("tool_calls") is not None
           and r.get("method", "").startswith("bookmark") for r in rows):
        recs = [probe_record(r) for r in rows]
        out["trigger_rate"] = _rate(trigger_rate(recs).value)
        out["recall_precision"] = _rate(recall_precision(recs).value)
        out["right_page_rate"] = _rate(right_page_rate(recs).value)
        out["speculative_hit_rate"] = _rate(speculative_hit_rate(recs).value)
        trig = trigger_rate(recs)
        out["needs_recall"], out["triggered"] = trig.total, trig.hits
        tool = trigger_rate([_tool_only(r) for r in recs])
        out["tool_trigger_rate"] = _rate(tool.value)
        paged = needed_paged_in_rate(recs)
        out["needed_paged_in_rate"], out["needed_paged_in"] = _rate(paged.value), paged.hits
        needing = [r for r in rows if r.get("evicted_needed")]
        out["needed_evicted"] = len(needing)
        rec_acc = _acc(needing, "recall_accuracy")
        out.update(rec_acc)
    return out


def part_shares(rows: Sequence[Row], budget: int) -> Row:
    """``share_<part>``: the mean billed tokens of each prompt part over ``rows`` as a
    share of the budget (:data:`copage.eval.methods.method.PARTS`; the shares add up to
    ``budget_spent``)."""
    from copage.eval.methods.method import PARTS

    if not rows or budget <= 0:
        return {}
    out: Row = {}
    for part in PARTS:
        total = sum(int((r.get("parts") or {}).get(part, 0)) for r in rows)
        if total:
            out[f"share_{part}"] = total / len(rows) / budget
    return out


def group(rows: Iterable[Row], keys: Sequence[str]) -> dict[tuple[Any, ...], list[Row]]:
    """Rows grouped by ``keys`` (insertion order kept)."""
    out: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for r in rows:
        out[tuple(r.get(k) for k in keys)].append(r)
    return out


def table(rows: Iterable[Row], keys: Sequence[str]) -> list[Row]:
    """One summary row per group of ``keys``."""
    return [{**dict(zip(keys, k, strict=True)), **summarise(g)} for k, g in group(rows, keys).items()]


def _metrics(rows: Sequence[Row]) -> dict[str, Callable[[Row], float | None]]:
    if rows and "answer" not in rows[0]:
        return {"evidence_coverage": lambda r: float(r["evidence_coverage"])}
    out: dict[str, Callable[[Row], float | None]] = {
        "locomo_f1": lambda r: (r.get("scores") or {}).get("locomo_f1")}
    if any(judge_mean(r, "scale5") is not None for r in rows):
        out["judge_scale5"] = lambda r: judge_mean(r, "scale5")
    if any(correct(r) is not None for r in rows):
        out["accuracy"] = lambda r: None if correct(r) is None else float(bool(correct(r)))
    return out


def significance(rows: Sequence[Row], reference: str | Sequence[str] = "bookmark_recall", *,
                 B: int = 10_000, seed: int = 0) -> list[Row]:
    """Paired bootstrap (units probe and conversation) and exact McNemar: each reference
    (in order) vs every other method; a pair already compared is not repeated."""
    refs = [reference] if isinstance(reference, str) else list(reference)
    out: list[Row] = []
    for (dataset, model), grp in group(rows, ("dataset", "model")).items():
        by_method = group(grp, ("method",))
        done: set[frozenset[str]] = set()
        for ref in refs:
            out += _against(dataset, model, grp, by_method, ref, done, B, seed)
    return out


def _against(dataset: Any, model: Any, grp: Sequence[Row],
             by_method: dict[tuple[Any, ...], list[Row]], reference: str,
             done: set[frozenset[str]], B: int, seed: int) -> list[Row]:
    out: list[Row] = []
    ref = {(r["conversation"], r["probe"]): r for r in by_method.get((reference,), [])}
    if not ref:
        return out
    for (method,), other in by_method.items():
        if method == reference or frozenset((method, reference)) in done:
            continue
        done.add(frozenset((method, reference)))
        pairs = [(ref[(r["conversation"], r["probe"])], r) for r in other
                 if (r["conversation"], r["probe"]) in ref]
        for metric, get in _metrics(grp).items():
            vals = [(get(a), get(b), a["conversation"]) for a, b in pairs]
            vals = [v for v in vals if v[0] is not None and v[1] is not None]
            if not vals:
                continue
            a = [float(v[0]) for v in vals]  # type: ignore[arg-type]
            b = [float(v[1]) for v in vals]  # type: ignore[arg-type]
            row: Row = {"dataset": dataset, "model": model, "method_a": reference,
                        "method_b": method, "metric": metric, "n": len(vals),
                        "mean_a": sum(a) / len(a), "mean_b": sum(b) / len(b)}
            for unit, clusters in (("probe", None), ("conversation", [v[2] for v in vals])):
                res = paired_bootstrap(a, b, clusters=clusters, B=B, seed=seed)
                row.update({f"{unit}_delta": res.delta, f"{unit}_ci_low": res.ci_low,
                            f"{unit}_ci_high": res.ci_high, f"{unit}_p": res.p_value,
                            f"{unit}_clusters": res.n_clusters, f"{unit}_warning": res.warning})
            if metric in ("accuracy", "evidence_coverage"):
                mc = mcnemar_exact([x >= 0.5 for x in a], [x >= 0.5 for x in b])
                row.update({"mcnemar_b01": mc.b01, "mcnemar_b10": mc.b10,
                            "mcnemar_p": mc.p_value})
            out.append(row)
    return out


def failures(rows: Sequence[Row]) -> list[Row]:
    """Among probes whose needed page was evicted: recall triggered, right page, correct."""
    out: list[Row] = []
    pool = [r for r in rows if "answer" in r and str(r.get("method", "")).startswith("bookmark")
            and r.get("evicted_needed")]
    for key, grp in group(pool, GROUP).items():
        types = sorted({str(r.get("fact_type")) for r in grp if r.get("fact_type")})
        for ft in ["all", *types]:
            sub = grp if ft == "all" else [r for r in grp if r.get("fact_type") == ft]
            spec = [r for r in sub if set(r["evicted_needed"]) <= set(r.get("speculative_pages") or ())]
            need = [r for r in sub if r not in spec]
            trig = [r for r in need if r.get("triggered")]
            right = [r for r in trig if r.get("right_page")]
            ok = [c for c in (correct(r) for r in sub) if c is not None]
            out.append({
                **dict(zip(GROUP, key, strict=True)), "fact_type": ft, "evicted": len(sub),
                "speculative_hits": len(spec), "needs_recall": len(need), "triggered": len(trig),
                "trigger_rate": len(trig) / len(need) if need else None,
                "right_page": len(right),
                "right_page_rate": len(right) / len(trig) if trig else None,
                "correct": sum(ok), "accuracy": sum(ok) / len(ok) if ok else None,
            })
    return out
