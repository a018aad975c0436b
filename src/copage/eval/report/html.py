"""A self-contained ``report.html``: tables inline, PNGs as base64 data URIs, no external resources."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path

from copage.eval.report.headline import headline_display
from copage.eval.report.paper import metric_note
from copage.eval.report.tables import Row, html_table

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;font-size:12px;margin:0.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#f0f0f0;position:sticky;top:0}td:first-child,th:first-child{text-align:left}
td.t{text-align:left;white-space:nowrap}
.wide{overflow-x:auto;max-width:100%}
img{max-width:100%;border:1px solid #ddd;margin:0.5em 0}
.note{color:#555;font-size:13px}details{margin-bottom:1em}
"""


def data_uri(path: Path) -> str:
    """``data:image/png;base64,...`` of a PNG file."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def render(title: str, intro: Sequence[str], paper: dict[str, list[Row]], figures: Sequence[Path],
           sections: dict[str, tuple[dict[str, list[Row]], list[str]]],
           head: Sequence[Row] = ()) -> str:
    """The page: intro lines, the headline table, figures, paper-style tables, then every
    experiment's notes (folded) and tables."""
    e = html.escape
    parts = [(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(title)}</title>"
              f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1>")]
    parts += [f"<p class='note'>{e(line)}</p>" for line in intro]
    if head:
        parts.append("<h2>Headline: every method at one billed budget</h2>"
                     "<p class='note'>score: evidence coverage (LLM-free: every evidence group "
                     "inside the prompts) or accuracy (with a model), 95% Wilson interval; "
                     "billed tokens: every call's input summed per probe; budget spent, and recent "
                     "turns .. preamble: the mean billed tokens (of each part) as a share of the "
                     "budget (the question, tool calls and joins make up the rest); does not fit: "
                     "probes that could not be asked within the budget, counted as misses; "
                     "paper: the paper's figure, in the metric its column names, on LoCoMo "
                     "files only. Bookmark "
                     "methods appear once per offline trigger (never: floor, rule: realistic, "
                     "oracle: ceiling), never as one result.</p>")
        for name, sub in headline_display(head).items():
            parts.append(f"<h3>{e(name)}</h3>{html_table(sub)}")
    if figures:
        parts.append("<h2>Figures</h2>")
        parts += [f"<h3>{e(p.stem)}</h3><img alt='{e(p.stem)}' src='{data_uri(p)}'>" for p in figures]
    if paper:
        parts.append("<h2>Tables laid out like the paper's</h2>")
        for name, rows in paper.items():
            note = metric_note(name.split(" (")[0])
            parts.append(f"<h3>{e(name)}</h3>"
                         + (f"<p class='note'>{e(note)}</p>" if note else "") + html_table(rows))
    for exp, (tables, notes) in sections.items():
        parts.append(f"<h2>Experiment: {e(exp)}</h2>")
        kept = [n for n in notes if n]
        if kept:
            parts.append(f"<details><summary>notes ({len(kept)})</summary>"
                         + "".join(f"<p class='note'>{e(n)}</p>" for n in kept) + "</details>")
        for name, rows in tables.items():
            parts.append(f"<details{' open' if len(rows) <= 40 else ''}><summary>{e(name)} "
                         f"({len(rows)} rows)</summary>{html_table(rows)}</details>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_html(path: Path, title: str, intro: Sequence[str], paper: dict[str, list[Row]],
               figures: Sequence[Path], sections: dict[str, tuple[dict[str, list[Row]], list[str]]],
               head: Sequence[Row] = ()) -> Path:
    """Write :func:`render`'s page to ``path``."""
    path.write_text(render(title, intro, paper, figures, sections, head), encoding="utf-8")
    return path
