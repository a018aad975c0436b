"""Writing the NLL experiment's table (Markdown, CSV, JSON) and rolling-NLL plot."""

from __future__ import annotations

import csv
from dataclasses import asdict
from pathlib import Path
from typing import Any

from copage.eval.jsonsafe import dumps
from copage.eval.nll.result import NllResult
from copage.eval.report.plots import can_plot


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:+.3f}"


def markdown(result: NllResult) -> str:
    """The per-case table and the summary, with the model that produced them."""
    lines = [
        (f"NLL fault detection, produced by model {result.model} "
        f"(temperature {result.temperature:g}, max_tokens {result.max_tokens}, "
        f"window w={result.window} tokens)"),
        "",
        ("| case | kind | fact types | tokens A/B | mean NLL A | mean NLL B | dNLL mean (B-A) "
        "| max window A | max window B | dNLL max (B-A) |"),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result.rows():
        lines.append(
            f"| {r['case']} | {r['kind']} | {r['fact_types']} | {r['tokens_full']}/"
            f"{r['tokens_gist']} | {r['mean_nll_full']:.3f} | {r['mean_nll_gist']:.3f} | "
            f"{r['delta_mean_nll']:+.3f} | {r['max_window_full']:.3f} | "
            f"{r['max_window_gist']:.3f} | {r['delta_max_window']:+.3f} |"
        )
    s = result.summary
    lines += [
        "",
        (f"Mean over the {s.experimental_cases} experimental cases: dNLL mean "
        f"{_f(s.experimental_delta_mean)}, dNLL max window {_f(s.experimental_delta_max)}; "
        f"control: dNLL mean {_f(s.control_delta_mean)}, dNLL max window "
        f"{_f(s.control_delta_max)}. Gist NLL below full NLL in {s.gist_lower_cases} of "
        f"{s.experimental_cases} experimental cases (the hypothesis predicts 0)."),
    ]
    return "\n".join(lines) + "\n"


def as_json(result: NllResult) -> dict[str, Any]:
    """Everything, including replies and per-token NLL."""
    return {
        "model": result.model, "window": result.window, "max_tokens": result.max_tokens,
        "temperature": result.temperature, "summary": asdict(result.summary),
        "cases": [
            {"case": c.case, "control": c.control, "fact_types": list(c.fact_types),
             "delta_mean_nll": c.delta_mean, "delta_max_window": c.delta_max,
             "full": asdict(c.full), "gist": asdict(c.gist)}
            for c in result.cases
        ],
    }


def plot(result: NllResult, path: Path) -> None:
    """Rolling NLL curves, one panel per case, full (A) vs gist (B)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(result.cases)
    fig, axes = plt.subplots(1, n, figsize=(3.2 * n, 3.0), sharey=True, squeeze=False)
    for ax, c in zip(axes[0], result.cases, strict=True):
        for stats, label, style in ((c.full, "A full", "-"), (c.gist, "B gist", "--")):
            # x = tokens generated at the window's end (a short reply: one point at its length)
            first = min(result.window, stats.tokens)
            xs = [first + i for i in range(len(stats.rolling))]
            ax.plot(xs, stats.rolling, style, label=label, marker="o" if len(xs) == 1 else None)
        ax.set_title(f"{c.case}{' (control)' if c.control else ''}\ndNLL {c.delta_mean:+.3f}",
                     fontsize=9)
        ax.set_xlabel(f"tokens generated (window end, w={result.window})", fontsize=8)
        ax.set_xlim(left=0)
    axes[0][0].set_ylabel("rolling mean NLL (nats/token)")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"Rolling NLL, produced by model {result.model}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(result: NllResult, out: Path, *, plot_png: bool = True) -> dict[str, Path]:
    """Write ``nll.md``, ``nll.csv``, ``nll.json`` (and ``nll.png``) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    files = {"markdown": out / "nll.md", "csv": out / "nll.csv", "json": out / "nll.json"}
    files["markdown"].write_text(markdown(result), encoding="utf-8")
    rows = result.rows()
    with files["csv"].open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    files["json"].write_text(dumps(as_json(result), indent=1), encoding="utf-8")
    if plot_png and can_plot():
        files["plot"] = out / "nll.png"
        plot(result, files["plot"])
    return files
