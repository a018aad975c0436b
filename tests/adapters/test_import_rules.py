"""Dependencies point inward (docs/architecture.md): every import counts, lazy ones too.

No layer below the front ends imports a front end, and the adapters import no
other front end. (Who may import ``copage.server`` and ``copage.eval`` is
tests/eval/test_import_graph.py's.)
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import copage

SRC = Path(copage.__file__).resolve().parent

# layer -> packages it must not import
RULES = {
    "adapters": ("copage.cli",),
    "session": ("copage.adapters", "copage.cli"),
    "memory.py": ("copage.session", "copage.adapters", "copage.cli", "copage.llm"),
    "stores": ("copage.memory", "copage.session", "copage.adapters", "copage.cli",
               "copage.llm"),
    "llm": ("copage.memory", "copage.session", "copage.adapters", "copage.cli"),
    "dense": ("copage.memory", "copage.session", "copage.adapters", "copage.cli",
              "copage.llm", "copage.stores", "copage.server", "copage.eval"),
}


def _imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.lineno, node.module))
            out.extend((node.lineno, f"{node.module}.{a.name}") for a in node.names)
    return out


@pytest.mark.parametrize("layer", list(RULES))
def test_layer_imports_point_inward(layer: str) -> None:
    root = SRC / layer
    files = [root] if root.is_file() else sorted(root.rglob("*.py"))
    assert files
    bad = [f"{p.relative_to(SRC)}:{n}: {name}" for p in files for n, name in _imports(p)
           if name.startswith(RULES[layer])]
    assert bad == []
