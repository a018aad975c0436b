"""The core is pure: it imports nothing from the adapters or the edges of the package."""

from __future__ import annotations

import ast
from pathlib import Path

import copage.core

CORE = Path(copage.core.__file__).parent
OUTSIDE = ("copage.stores", "copage.llm", "copage.server", "copage.session", "copage.eval",
           "copage.cli", "copage.memory", "copage.llmkeywords")
# (pathlib is not listed: tokens.py uses it only to locate an extension module to import)
IO_MODULES = {"os", "socket", "sqlite3", "time", "subprocess", "urllib", "http", "psycopg"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_core_imports_no_adapter_and_no_io() -> None:
    bad = []
    for path in sorted(CORE.rglob("*.py")):
        for name in _imports(path):
            if name.startswith(OUTSIDE) or name.split(".")[0] in IO_MODULES:
                bad.append(f"{path.relative_to(CORE)}: {name}")
    assert bad == []


def test_change_types_are_the_cores_and_stores_reexport_them() -> None:
    from copage.core import changes
    from copage.stores import ChangeSet, Event, PageRecord

    assert (ChangeSet, Event, PageRecord) == (changes.ChangeSet, changes.Event, changes.PageRecord)
