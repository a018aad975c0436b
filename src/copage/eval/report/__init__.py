"""The report of a ``copage bench`` run: summary.json, Markdown/CSV tables, PNGs, report.html.

Input: the experiments' results (tables of flat rows, notes). Output, in the run
directory: ``summary.json`` (``methods`` rows from ``main``, ``paging`` rows with
the keys of ``copage simulate --json``, every table and note), ``tables/*.md``
and ``tables/*.csv``, ``figures/*.png`` and a self-contained ``report.html``.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from copage.eval.experiments.interface import ExperimentResult
from copage.eval.jsonsafe import dumps
from copage.eval.report.headline import headline, lead_sentences
from copage.eval.report.html import write_html
from copage.eval.report.paper import paper_tables
from copage.eval.report.plots import NO_FIGURES, can_plot, make_figures
from copage.eval.report.tables import Row, markdown, write_table

__all__ = ["build_summary", "write_report"]


def build_summary(results: Sequence[ExperimentResult], settings: Mapping[str, Any]) -> dict[str, Any]:
    """The ``summary.json`` object."""
    by_name = {r.name: r for r in results}
    main = by_name.get("main")
    paging = by_name.get("paging")
    methods = main.tables.get("methods", []) if main else []
    return {
        "settings": dict(settings),
        "methods": methods,
        "headline": headline({r.name: r.tables for r in results}),
        "leader": lead_sentences({r.name: r.tables for r in results}),
        "paging": paging.tables.get("paging", []) if paging else [],
        "experiments": {r.name: {"notes": r.notes, "tables": r.tables} for r in results},
    }


def experiment_figures(results: Sequence[ExperimentResult], folder: Path) -> list[Path]:
    """Figures an experiment drew itself (``nll``'s rolling NLL), copied into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for r in results:
        for fig in r.figures:
            src = Path(fig)
            if not src.exists():
                continue
            dest = folder / (src.name if src.name.startswith(r.name) else f"{r.name}_{src.name}")
            if src.resolve() != dest.resolve():
                shutil.copyfile(src, dest)
            out.append(dest)
    return out


def write_report(out: Path, results: Sequence[ExperimentResult], settings: Mapping[str, Any],
                 intro: Sequence[str] = ()) -> dict[str, Path]:
    """Write everything; returns the main paths (``summary``, ``html``, ``markdown``)."""
    out.mkdir(parents=True, exist_ok=True)
    if not can_plot():
        intro = [*intro, NO_FIGURES]
    # who leads, with the paired test, before any table or paper figure
    intro = [*intro, *lead_sentences({r.name: r.tables for r in results})]
    summary = build_summary(results, settings)
    (out / "summary.json").write_text(dumps(summary, indent=1), encoding="utf-8")
    tables: dict[str, dict[str, list[Row]]] = {r.name: r.tables for r in results}
    folder = out / "tables"
    md_parts = ["# copage bench report\n", *[f"{line}\n" for line in intro]]
    head = headline(tables)
    if head:
        write_table(folder, "headline", head)
        md_parts.append(markdown(head, "headline: every method at one billed budget"))
    for name, rows in paper_tables(tables).items():
        write_table(folder, name, rows)
    paper = paper_tables(tables, split=True)
    for name, rows in paper.items():
        md_parts.append(markdown(rows, name))
    for r in results:
        md_parts.append(f"## {r.name}\n")
        md_parts += [f"- {n}\n" for n in r.notes if n]
        for name, rows in r.tables.items():
            write_table(folder, f"{r.name}_{name}", rows)
            md_parts.append(markdown(rows, f"{r.name}: {name}"))
    figures = make_figures(tables, out / "figures")
    figures += experiment_figures(results, out / "figures")
    md = out / "report.md"
    md.write_text("\n".join(md_parts), encoding="utf-8")
    sections = {r.name: (r.tables, r.notes) for r in results}
    page = write_html(out / "report.html", "copage bench report", intro, paper, figures, sections,
                      head)
    return {"summary": out / "summary.json", "html": page, "markdown": md}
