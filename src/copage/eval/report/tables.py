"""Rows (lists of flat dicts) to Markdown, CSV and HTML tables."""

from __future__ import annotations

import csv
import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

Row = dict[str, Any]


def columns(rows: Sequence[Row]) -> list[str]:
    """Keys of ``rows`` in order of first appearance."""
    return list(dict.fromkeys(k for r in rows for k in r))


P_FLOOR = 1e-4
"""p-values below this print as ``< 1e-4`` (never ``0.000``)."""


def is_p_column(column: str | None) -> bool:
    """True for p-value columns (``p``, ``p_value``, ``*_p``)."""
    return column is not None and (column in ("p", "p_value") or column.endswith("_p"))


def is_token_column(column: str | None) -> bool:
    """True for token-count columns (printed as integers)."""
    return column is not None and "tokens" in column and not column.startswith("share")


def cell(value: Any, column: str | None = None) -> str:
    """A value as table text: floats to 3 decimals (p-values below :data:`P_FLOOR` as
    ``< 1e-4``, other non-zero values below 0.0005 in scientific notation; token counts
    of ``column`` as integers), None as ``-``, containers as JSON."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)) and is_token_column(column):
        return f"{round(value):,}"
    if isinstance(value, float):
        if is_p_column(column) and value < P_FLOOR:
            return "< 1e-4"
        if value != 0 and abs(value) < 0.0005:
            return f"{value:.1e}"
        return f"{value:.3f}"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def markdown(rows: Sequence[Row], title: str | None = None) -> str:
    """A GitHub-flavoured Markdown table (empty note when there are no rows)."""
    head = f"### {title}\n\n" if title else ""
    if not rows:
        return head + "_no rows_\n"
    cols = columns(rows)
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    lines += ["| " + " | ".join(cell(r.get(c), c).replace("|", "\\|") for c in cols) + " |" for r in rows]
    return head + "\n".join(lines) + "\n"


def html_table(rows: Sequence[Row]) -> str:
    """An HTML ``<table>`` of ``rows``."""
    if not rows:
        return "<p><em>no rows</em></p>"
    cols = columns(rows)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    def td(value: Any, column: str) -> str:
        text = html.escape(cell(value, column))
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        return f"<td>{text}</td>" if numeric else f"<td class='t'>{text}</td>"

    body = "".join("<tr>" + "".join(td(r.get(c), c) for c in cols) + "</tr>" for r in rows)
    return (f"<div class='wide'><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
            "</table></div>")


def write_csv(path: Path, rows: Sequence[Row]) -> Path:
    """Write ``rows`` as CSV (containers as JSON, None empty)."""
    cols = columns(rows)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for r in rows:
            w.writerow(["" if r.get(c) is None else
                        json.dumps(r[c], sort_keys=True) if isinstance(r.get(c), (dict, list, tuple))
                        else r[c] for c in cols])
    return path


def write_table(folder: Path, name: str, rows: Sequence[Row], title: str | None = None) -> list[Path]:
    """``folder/name.md`` and ``folder/name.csv``."""
    folder.mkdir(parents=True, exist_ok=True)
    md = folder / f"{name}.md"
    md.write_text(markdown(rows, title), encoding="utf-8")
    return [md, write_csv(folder / f"{name}.csv", rows)]
