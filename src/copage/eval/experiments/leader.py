"""Who leads at each budget: copage's default against the stronger BM25 baseline (issue 30).

The report's first sentences, one per (dataset, budget of the curves): copage's
default (``bookmark_recall+copage`` under the default trigger) against the
*stronger* of the BM25 rows run, by mean evidence coverage at that budget: the
paper's row over sessions behind the last ``window`` turns (``bm25``) and the rows
over pages behind copage's own resident window (``bm25@fixed_10``, ...). The
difference is tested with the paired bootstrap resampling whole conversations
(:func:`copage.eval.stats.paired_bootstrap`, probes of one conversation are not
independent); with fewer than 10 conversations the sentence says so.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from copage.eval.methods.readers import DEFAULT_TRIGGER
from copage.eval.stats import paired_bootstrap

Row = dict[str, Any]

COPAGE_DEFAULT = "bookmark_recall+copage"
"""copage's default: ``PagerConfig()`` and PagedChat's default recall mode."""
BM25 = "bm25"


def is_bm25(method: str) -> bool:
    """True for the BM25 baselines: ``bm25`` (sessions) and ``bm25@<units>`` (pages)."""
    return method == BM25 or method.startswith(BM25 + "@")


def wanted(row: Row) -> bool:
    """True for the per-probe rows the comparison reads (copage's default under the
    default trigger, every BM25 baseline)."""
    method = str(row.get("method"))
    if method == COPAGE_DEFAULT:
        return row.get("trigger") == DEFAULT_TRIGGER
    return is_bm25(method)


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _label(method: str, rows: Sequence[Row]) -> str:
    units = next((r.get("units") for r in rows if r.get("units")), None)
    return f"{method} ({units})" if units else method


def leaders(rows: Iterable[Row], *, B: int = 10_000, seed: int = 0) -> list[Row]:
    """One row per (dataset, budget) holding copage's default and a BM25 baseline: both
    coverages and billed tokens, the stronger BM25 row, the paired bootstrap of
    copage minus it (conversations resampled) and the sentence the report leads with."""
    cells: dict[tuple[Any, Any], dict[str, list[Row]]] = {}
    for r in rows:
        if wanted(r):
            cells.setdefault((r["dataset"], r["budget"]), {}).setdefault(str(r["method"]), []).append(r)
    out: list[Row] = []
    for (dataset, budget), by_method in sorted(cells.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        ours = by_method.get(COPAGE_DEFAULT)
        rivals = {m: rs for m, rs in by_method.items() if is_bm25(m)}
        if not ours or not rivals:
            continue
        cov = {m: _mean([float(r["evidence_coverage"]) for r in rs]) for m, rs in rivals.items()}
        best = max(sorted(cov), key=lambda m: cov[m])
        ref = {(r["conversation"], r["probe"]): r for r in rivals[best]}
        pairs = [(r, ref[(r["conversation"], r["probe"])]) for r in ours
                 if (r["conversation"], r["probe"]) in ref]
        a = [float(x["evidence_coverage"]) for x, _ in pairs]
        b = [float(y["evidence_coverage"]) for _, y in pairs]
        res = paired_bootstrap(a, b, clusters=[x["conversation"] for x, _ in pairs], B=B, seed=seed)
        row: Row = {
            "dataset": dataset, "budget": budget, "probes": len(pairs),
            "copage": COPAGE_DEFAULT, "copage_coverage": _mean(a),
            "copage_billed_mean": _mean([float(x["prompt_tokens"]) for x, _ in pairs]),
            "bm25_best": best, "bm25_coverage": _mean(b),
            "bm25_billed_mean": _mean([float(y["prompt_tokens"]) for _, y in pairs]),
            "bm25_rows": ", ".join(f"{m} {cov[m]:.3f}" for m in sorted(cov)),
            "delta": res.delta, "ci_low": res.ci_low, "ci_high": res.ci_high, "p": res.p_value,
            "conversations": res.n_clusters, "warning": res.warning, "B": res.B,
        }
        row["leader"] = (COPAGE_DEFAULT if res.delta > 0 else best if res.delta < 0 else "tie")
        row["sentence"] = sentence(row, _label(best, rivals[best]))
        out.append(row)
    return out


def sentence(row: Row, best_label: str) -> str:
    """The one sentence of a (dataset, budget): who leads, by how much, and the test."""
    low, high = row["ci_low"], row["ci_high"]
    lead = row["leader"]
    if lead == "tie":
        head = f"copage's default and {row['bm25_best']} tie"
    else:
        who = f"copage's default ({COPAGE_DEFAULT})" if lead == COPAGE_DEFAULT else row["bm25_best"]
        head = f"{who} leads" + ("" if low > 0 or high < 0 else " (not significant)")
    p = f"p<{1 / row['B']:.0e}" if row["p"] == 0 else f"p={row['p']:.3g}"
    small = ", fewer than 10: read the interval with care" if row.get("warning") else ""
    return (f"{row['dataset']} at {int(row['budget']):,} tokens: {head}. Evidence coverage "
            f"{row['copage_coverage']:.3f} for copage's default ({row['copage_billed_mean']:,.0f} "
            f"tokens billed on average) vs {row['bm25_coverage']:.3f} for the stronger BM25 "
            f"baseline, {best_label} ({row['bm25_billed_mean']:,.0f} billed); copage minus it "
            f"{row['delta']:+.3f}, 95% CI [{low:+.3f}, {high:+.3f}], {p} (paired bootstrap "
            f"resampling {row['conversations']} conversations{small}; {row['probes']} probes). "
            f"BM25 rows: {row['bm25_rows']}.")
