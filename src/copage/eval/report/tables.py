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


def cell(value: Any) -> str:
    """A value as table text: floats to 3 decimals, None as ``-``, containers as JSON."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
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
    lines += ["| " + " | ".join(cell(r.get(c)).replace("|", "\\|") for c in cols) + " |" for r in rows]
    return head + "\n".join(lines) + "\n"


def html_table(rows: Sequence[Row]) -> str:
    """An HTML ``<table>`` of ``rows``."""
    if not rows:
        return "<p><em>no rows</em></p>"
    cols = columns(rows)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell(r.get(c)))}</td>" for c in cols) + "</tr>"
        for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


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
