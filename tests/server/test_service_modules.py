"""The proxy's turn is split by responsibility, and the imports point inward.

``server/service.py`` orchestrates; ``locking``, ``recognise``, ``plan`` and
``commit`` each own one mechanism and never import the orchestrator (nor, for the
lower ones, each other upward), so no mechanism can be copied back into it.
"""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "src" / "copage" / "server"
#: Each mechanism module and the copage.server modules it must not import.
FORBIDDEN = {
    "locking": {"service", "plan", "commit", "recognise"},
    "recognise": {"service", "plan", "commit", "locking"},
    "plan": {"service", "commit", "locking"},
    "commit": {"service", "plan", "locking"},
}


def _server_imports(name: str) -> set[str]:
    tree = ast.parse((SERVER / f"{name}.py").read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            mods = [node.module]
        elif isinstance(node, ast.Import):
            mods = [a.name for a in node.names]
        else:
            continue
        for mod in mods:
            if mod.startswith("copage.server."):
                out.add(mod.split(".")[2])
    return out


def test_mechanism_modules_do_not_import_the_orchestrator_or_upward() -> None:
    bad = {name: sorted(_server_imports(name) & banned)
           for name, banned in FORBIDDEN.items() if _server_imports(name) & banned}
    assert not bad, f"imports must point inward: {bad}"


def test_each_module_says_what_it_owns() -> None:
    for name in [*FORBIDDEN, "service"]:
        doc = ast.get_docstring(ast.parse((SERVER / f"{name}.py").read_text()))
        assert doc and len(doc.split()) > 20, f"server/{name}.py needs a docstring"


def test_the_service_keeps_no_copy_of_the_mechanisms() -> None:
    tree = ast.parse((SERVER / "service.py").read_text())
    defined = {n.name for n in ast.walk(tree)
               if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    moved = {"_guard", "_acquire", "_enter", "_busy", "_finish", "_abort", "_release",
             "_plan", "_again", "_branch", "_overlap", "_asks_again", "_replay", "_Prep",
             "_shielded", "_local", "_stats"}
    assert not defined & moved, sorted(defined & moved)
