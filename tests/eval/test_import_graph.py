"""Dependencies point one way: no import circles in ``copage.eval``; the library never imports it.

Every ``import`` statement counts, also those inside functions (a lazy import is
still a dependency, only deferred).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import copage

SRC = Path(copage.__file__).resolve().parent


def _module(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module(p): p for p in SRC.rglob("*.py")}


def _imports(path: Path) -> Iterator[str]:
    mod = _module(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            for a in node.names:  # ``from pkg import submodule`` imports the submodule
                yield f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base


def graph(prefix: str) -> dict[str, set[str]]:
    """Import edges between the modules under ``prefix``."""
    return {m: {i for i in _imports(p) if i in MODULES and i.startswith(prefix) and i != m}
            for m, p in MODULES.items() if m.startswith(prefix)}


def cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles_among_the_experiments_and_nll() -> None:
    found = cycles(graph("copage.eval"))
    for pair in (("copage.eval.experiments.grid", "copage.eval.experiments.model_probe"),
                 ("copage.eval.nll.nll_tables", "copage.eval.nll.nll_runner")):
        assert not [c for c in found if set(pair) <= c], (pair, found)
    mine = [c for c in found if any(m.startswith(("copage.eval.experiments", "copage.eval.nll",
                                                  "copage.eval.methods", "copage.eval.runner",
                                                  "copage.eval.report")) for m in c)]
    assert mine == []


def test_only_the_cli_imports_the_benchmark() -> None:
    """Nothing of the library (core, stores, llm, llmkeywords, memory, session, server,
    adapters) imports ``copage.eval``; the CLI wires the benchmark in."""
    offenders = {m: sorted(i for i in _imports(p) if i == "copage.eval"
                           or i.startswith("copage.eval."))
                 for m, p in MODULES.items()
                 if not m.startswith(("copage.eval", "copage.cli"))}
    assert {m: v for m, v in offenders.items() if v} == {}
    assert any(m.startswith("copage.server.") for m in offenders)  # the walk sees them


def test_only_the_cli_and_the_server_import_the_server() -> None:
    """The adapters (MCP, LangChain, Agents SDK) and the library under them never import
    ``copage.server``: what they share with the proxy (the conversation cache, the API
    keys) lives outside it."""
    offenders = {m: sorted(i for i in _imports(p) if i == "copage.server"
                           or i.startswith("copage.server."))
                 for m, p in MODULES.items()
                 if not m.startswith(("copage.server", "copage.cli"))}
    assert {m: v for m, v in offenders.items() if v} == {}
    assert any(m.startswith("copage.adapters.mcp") for m in MODULES)  # the walk sees them


# The house's three limits (issue 33): every module of src/ counts, lazy imports too.
MAX_LINES = 500


def test_no_import_circles_anywhere_in_src() -> None:
    assert cycles(graph("copage")) == []


def test_no_module_over_the_line_limit() -> None:
    long = {m: n for m, p in MODULES.items()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split these modules (limit {MAX_LINES} lines): {long}"


def test_no_two_modules_share_a_file_name() -> None:
    """A name says which module it is: ``formats/chat.py``, not a second ``responses.py``
    (package ``__init__.py`` files aside)."""
    by_name: dict[str, list[str]] = {}
    for m, p in MODULES.items():
        if p.name != "__init__.py":
            by_name.setdefault(p.name, []).append(m)
    assert {n: ms for n, ms in by_name.items() if len(ms) > 1} == {}
