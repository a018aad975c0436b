"""A self-contained ``report.html``: tables inline, PNGs as base64 data URIs, no external resources."""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from pathlib import Path

from copage.eval.report.tables import Row, html_table

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;font-size:12px;margin:0.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:right}
th{background:#f0f0f0}td:first-child,th:first-child{text-align:left}
img{max-width:100%;border:1px solid #ddd;margin:0.5em 0}
.note{color:#555;font-size:13px}details{margin-bottom:1em}
"""


def data_uri(path: Path) -> str:
    """``data:image/png;base64,...`` of a PNG file."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def render(title: str, intro: Sequence[str], paper: dict[str, list[Row]], figures: Sequence[Path],
           sections: dict[str, tuple[dict[str, list[Row]], list[str]]]) -> str:
    """The page: intro lines, paper-style tables, figures, then every experiment's tables and notes."""
    e = html.escape
    parts = [(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(title)}</title>"
              f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1>")]
    parts += [f"<p class='note'>{e(line)}</p>" for line in intro]
    if figures:
        parts.append("<h2>Figures</h2>")
        parts += [f"<h3>{e(p.stem)}</h3><img alt='{e(p.stem)}' src='{data_uri(p)}'>" for p in figures]
    if paper:
        parts.append("<h2>Tables laid out like the paper's</h2>")
        for name, rows in paper.items():
            parts.append(f"<h3>{e(name)}</h3>{html_table(rows)}")
    for exp, (tables, notes) in sections.items():
        parts.append(f"<h2>Experiment: {e(exp)}</h2>")
        parts += [f"<p class='note'>{e(n)}</p>" for n in notes if n]
        for name, rows in tables.items():
            parts.append(f"<details{' open' if len(rows) <= 40 else ''}><summary>{e(name)} "
                         f"({len(rows)} rows)</summary>{html_table(rows)}</details>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_html(path: Path, title: str, intro: Sequence[str], paper: dict[str, list[Row]],
               figures: Sequence[Path], sections: dict[str, tuple[dict[str, list[Row]], list[str]]]) -> Path:
    """Write :func:`render`'s page to ``path``."""
    path.write_text(render(title, intro, paper, figures, sections), encoding="utf-8")
    return path
