"""Nothing outside the core reaches into ``PagedMemory.pager``: callers use PagedMemory."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "copage"
# core/ is the pager's own layer and memory.py owns it (with its two parts,
# memory_reads.py and undo.py). eval/ simulates with bare pagers, never mem.pager.
ALLOWED = ("core/", "memory.py", "memory_reads.py", "undo.py")
REACH = re.compile(r"\bmem(?:ory)?\.pager\b|\.memory\.pager\b")


def test_callers_use_paged_memory_not_its_pager() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if any(rel == a or (a.endswith("/") and rel.startswith(a)) for a in ALLOWED):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if REACH.search(line) and not line.lstrip().startswith("#"):
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "use PagedMemory's own methods:\n" + "\n".join(found)


def test_no_front_end_reads_a_pager_attribute() -> None:
    """Whatever the variable's name (``self._conv.pager``, ``m.pager``, a ``getattr``):
    outside the core, ``memory.py`` and ``eval/`` (whose bare pagers are its own), no
    code reads an attribute called ``pager``."""
    import ast

    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.startswith(("core/", "eval/")) or rel in ("memory.py", "memory_reads.py", "undo.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            by_name = (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                       and node.func.id in ("getattr", "setattr") and len(node.args) > 1
                       and isinstance(node.args[1], ast.Constant)
                       and node.args[1].value == "pager")
            if (isinstance(node, ast.Attribute) and node.attr == "pager") or by_name:
                found.append(f"{rel}:{node.lineno}")
    assert not found, "use PagedMemory's own methods:\n" + "\n".join(found)
