"""PNG figures of a benchmark run (matplotlib, Agg backend; nothing shown on screen).

Each function takes the run's tables (experiment -> table -> rows) and a folder,
and returns the path it wrote, or None when the tables it needs are absent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from copage.eval.report.tables import Row

Tables = dict[str, dict[str, list[Row]]]
_PAPER = ("fifo", "lru", "lfu", "belady")


#: Said in place of the figures when matplotlib is missing (a plain ``pip install copage``).
NO_FIGURES = "Figures skipped: matplotlib is not installed (pip install 'copage[bench]')."


def can_plot() -> bool:
    """Whether matplotlib is importable (it comes with the ``bench`` extra)."""
    import importlib.util

    return importlib.util.find_spec("matplotlib") is not None


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _label(r: Row) -> str:
    return str(r["dataset"]) + (f" / {r['model']}" if r.get("model") else "")


def _grouped(ax: Any, groups: Sequence[str], series: dict[str, list[float | None]],
             hatch: dict[str, str] | None = None) -> None:
    n = max(1, len(series))
    width = 0.8 / n
    for i, (name, vals) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, [v if v is not None else 0.0 for v in vals], width, label=name,
               hatch=(hatch or {}).get(name, ""), edgecolor="black", linewidth=0.4)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=20, ha="right")


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    _plt().close(fig)
    return path


def boundary_plot(tables: Tables, folder: Path) -> Path | None:
    """Figure 4: per boundary, hit rate (paper policy average) and accuracy when a model ran."""
    paging = tables.get("paging", {})
    rows = paging.get("boundaries") or []
    if not rows:
        return None
    plt = _plt()
    metrics = [("hit_rate", rows, "hit rate (LLM-free)")]
    if paging.get("boundaries_model"):
        metrics.append(("accuracy", paging["boundaries_model"], "accuracy (model)"))
    fig, axes = plt.subplots(1, len(metrics), figsize=(6.5 * len(metrics), 4), squeeze=False)
    for ax, (m, rs, title) in zip(axes[0], metrics, strict=True):
        bounds = list(dict.fromkeys(r["boundary"] for r in rs))
        series = {lab: [next((r.get(m) for r in rs if _label(r) == lab and r["boundary"] == b), None)
                        for b in bounds] for lab in dict.fromkeys(_label(r) for r in rs)}
        _grouped(ax, bounds, series)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel(title)
        ax.set_xlabel("page boundary")
        ax.set_title(f"Boundary: {title}, mean over FIFO/LRU/LFU/Belady")
        ax.legend(fontsize=8)
    return _save(fig, folder / "boundary.png")


def policy_plot(tables: Tables, folder: Path) -> Path | None:
    """Figure 5: hit rate per eviction policy per dataset (copage's policies hatched)."""
    rows = tables.get("paging", {}).get("policies") or []
    if not rows:
        return None
    plt = _plt()
    labels = list(dict.fromkeys(_label(r) for r in rows))
    fig, axes = plt.subplots(1, len(labels), figsize=(4.2 * len(labels), 3.8), squeeze=False)
    for ax, lab in zip(axes[0], labels, strict=True):
        sel = [r for r in rows if _label(r) == lab]
        pols = [r["policy"] for r in sel]
        colors = ["tab:blue" if p in _PAPER else "tab:orange" for p in pols]
        ax.bar(pols, [r.get("hit_rate") or 0.0 for r in sel], color=colors, edgecolor="black",
               hatch=None, linewidth=0.4)
        for i, p in enumerate(pols):
            if p not in _PAPER:
                ax.patches[i].set_hatch("//")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{lab}: hit rate by policy")
        ax.set_xlabel("eviction policy")
        ax.tick_params(axis="x", rotation=30)
    axes[0][0].set_ylabel("hit rate (mean over boundaries)")
    fig.text(0.01, 0.01, "blue: paper's policies; orange hatched: copage's", fontsize=8)
    return _save(fig, folder / "policies.png")


def topology_plot(tables: Tables, folder: Path) -> Path | None:
    """Figure 6: revisit rate per conversation against LRU minus FIFO hit rate."""
    rows = [r for r in (tables.get("paging", {}).get("topology")
                        or tables.get("topology", {}).get("topology") or [])
            if r.get("revisit_rate") is not None and r.get("lru_minus_fifo") is not None]
    if not rows:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4.2))
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        sel = [r for r in rows if r["dataset"] == ds]
        ax.scatter([r["revisit_rate"] for r in sel], [r["lru_minus_fifo"] for r in sel],
                   label=ds, alpha=0.75)
    ax.axhline(0, color="grey", linewidth=0.6)
    ax.set_xlabel("revisit rate (share of probe page accesses to an already-accessed page)")
    ax.set_ylabel("LRU hit rate - FIFO hit rate")
    ax.set_title("Topology: revisit rate vs LRU - FIFO hit rate, per conversation")
    ax.legend(fontsize=8)
    return _save(fig, folder / "topology.png")


def formats_plot(tables: Tables, folder: Path) -> Path | None:
    """Figure 7: tokens per bookmark against routing_top1 (and accuracy) per format."""
    rows = tables.get("formats", {}).get("formats") or []
    if not rows:
        return None
    plt = _plt()
    metrics = [m for m in ("routing_top1", "accuracy", "trigger_rate") if any(r.get(m) is not None for r in rows)]
    fig, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 4), squeeze=False)
    for ax, m in zip(axes[0], metrics, strict=True):
        for lab in dict.fromkeys(_label(r) for r in rows):
            sel = sorted((r for r in rows if _label(r) == lab and r.get(m) is not None),
                         key=lambda r: r["bookmark_tokens_mean"] or 0.0)
            if not sel:
                continue
            ax.plot([r["bookmark_tokens_mean"] for r in sel], [r[m] for r in sel], "o-", label=lab)
            for r in sel:
                ax.annotate(r["format"], (r["bookmark_tokens_mean"], r[m]), fontsize=7,
                            xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel("tokens per bookmark")
        ax.set_ylabel(m)
        ax.set_title(f"Bookmark format: tokens vs {m}")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    return _save(fig, folder / "formats.png")


def method_panels(rows: Sequence[Row]) -> list[tuple[str, str, list[tuple[str, float, float, float]]]]:
    """The panels of :func:`methods_plot`: (label, metric, [(method, value, ci low, ci high)]).

    One panel per dataset (and model): a model's rows show accuracy with its Wilson
    interval over the *scored* probes (``accuracy_n``); LLM-free rows show evidence
    coverage over all probes. Panels without a value are left out.
    """
    from copage.eval.stats import wilson_interval

    panels = []
    for lab in dict.fromkeys(_label(r) for r in rows):
        sel = [r for r in rows if _label(r) == lab]
        metric, n_key = (("accuracy", "accuracy_n") if any(r.get("accuracy") is not None for r in sel)
                         else ("evidence_coverage", "probes"))
        bars = []
        for r in sel:
            v, n = r.get(metric), int(r.get(n_key) or 0)
            if v is None or not n:
                continue
            ci = wilson_interval(round(float(v) * n), n)
            bars.append((_series(r), float(v), ci.low, ci.high))
        if bars:
            panels.append((lab, metric, bars))
    return panels


def methods_plot(tables: Tables, folder: Path) -> Path | None:
    """Method comparison with Wilson 95% intervals (accuracy with a model, else evidence coverage)."""
    panels = method_panels(tables.get("main", {}).get("methods") or [])
    if not panels:
        return None
    plt = _plt()
    height = sum(0.22 * len(p[2]) + 0.9 for p in panels)
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, height), squeeze=False,
                             gridspec_kw={"height_ratios": [len(p[2]) + 3 for p in panels]})
    for ax, (lab, metric, bars) in zip(axes[:, 0], panels, strict=True):
        vals = [b[1] for b in bars]
        ax.barh([b[0] for b in bars], vals, xerr=[[v - b[2] for v, b in zip(vals, bars, strict=True)],
                                                   [b[3] - v for v, b in zip(vals, bars, strict=True)]],
                capsize=3, color="tab:green")
        ax.set_xlim(0, 1.0)
        ax.invert_yaxis()
        ax.set_title(f"{lab}: {metric} (Wilson 95% CI)", fontsize=10)
        ax.set_xlabel(metric.replace("_", " "))
        ax.tick_params(axis="y", labelsize=7)
    return _save(fig, folder / "methods.png")


DISTINCT = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
            "tab:pink", "tab:gray", "tab:olive", "tab:cyan", "black", "gold", "navy", "lime")
"""One clearly different colour per series (markers differ too)."""


def _series(r: Row) -> str:
    """A method's label, with its offline trigger when it has one."""
    trig = r.get("trigger")
    return f"{r['method']} [{trig}]" if trig else str(r["method"])


def budget_plot(tables: Tables, folder: Path) -> Path | None:
    """Coverage against billed prompt tokens per method, one point per budget.

    Bookmark methods are drawn at their ``rule`` trigger, with a vertical bar from
    the ``never`` to the ``oracle`` trigger's coverage (the floor and the ceiling).
    Every series has its own colour and marker; the legend sits outside the axes;
    a point of a run where some probe billed more than its budget is circled red
    (there should be none).
    """
    rows = [r for r in tables.get("main", {}).get("budget_curves") or []
            if r.get("prompt_tokens_mean") is not None and r.get("evidence_coverage") is not None]
    if not rows:
        return None
    plt = _plt()
    datasets = list(dict.fromkeys(str(r["dataset"]) for r in rows))
    fig, axes = plt.subplots(len(datasets), 1, figsize=(10, 4.4 * len(datasets)), squeeze=False)
    markers = "osD^v<>phX*"
    for ax, ds in zip(axes[:, 0], datasets, strict=True):
        sel = [r for r in rows if r["dataset"] == ds]
        methods = list(dict.fromkeys(str(r["method"]) for r in sel))
        palette = DISTINCT
        for i, method in enumerate(methods):
            mine = [r for r in sel if r["method"] == method]
            main = [r for r in mine if r.get("trigger") in (None, "rule")]
            pts = sorted(main, key=lambda r: int(r["budget"]))
            xs = [float(r["prompt_tokens_mean"]) for r in pts]
            ys = [float(r["evidence_coverage"]) for r in pts]
            color = palette[i % len(palette)]
            label = method + (" (rule; bar: never..oracle)" if len(mine) > len(main) else "")
            ax.plot(xs, ys, "-", marker=markers[i % len(markers)], markersize=5, color=color,
                    label=label, linewidth=1.2)
            for r, x in zip(pts, xs, strict=True):
                bounds = [float(o["evidence_coverage"]) for o in mine
                          if o.get("trigger") in ("never", "oracle") and o["budget"] == r["budget"]]
                if bounds:
                    ax.vlines(x, min(bounds), max(bounds), color=color, linewidth=2.5, alpha=0.35)
            over = [(x, y) for r, x, y in zip(pts, xs, ys, strict=True) if r.get("over_budget")]
            if over:
                ax.scatter([o[0] for o in over], [o[1] for o in over], s=120, facecolors="none",
                           edgecolors="red", linewidths=1.5, zorder=5)
        for b in sorted({int(r["budget"]) for r in sel}):
            ax.axvline(b, color="grey", linewidth=0.6, linestyle=":")
        ax.set_xscale("log", base=2)
        ticks = [2 ** i for i in range(7, 15)]
        lo = min(float(r["prompt_tokens_mean"]) for r in sel)
        hi = max(max(float(r["prompt_tokens_mean"]) for r in sel), *(int(r["budget"]) for r in sel))
        shown = [t for t in ticks if lo / 2 <= t <= hi * 1.5]
        ax.set_xticks(shown, [f"{t:,}" for t in shown])
        ax.minorticks_off()
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("mean billed prompt tokens per probe, every call (log scale; dotted: budgets)")
        ax.set_ylabel("evidence coverage (all groups)")
        ax.set_title(f"{ds}: evidence coverage vs billed tokens at budgets "
                     + ", ".join(str(b) for b in sorted({int(r['budget']) for r in sel}))
                     + " (red circle: over budget)", fontsize=10)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return _save(fig, folder / "budget_curves.png")


FIGURES: tuple[Callable[[Tables, Path], Path | None], ...] = (
    methods_plot, budget_plot, boundary_plot, policy_plot, topology_plot, formats_plot)
"""Figures drawn from tables; an experiment's own figures (``nll``) come with its result."""


def make_figures(tables: Tables, folder: Path) -> list[Path]:
    """Every figure whose tables exist (none without matplotlib: see :data:`NO_FIGURES`)."""
    if not can_plot():
        return []
    folder.mkdir(parents=True, exist_ok=True)
    return [p for f in FIGURES if (p := f(tables, folder)) is not None]
