"""One "open a conversation" (issue 18): every front end opens through
``copage.session.opening``; nothing else loads-or-creates or caches one.

A ``PagedMemory(store=..., conversation_id=...)`` outside ``session/`` and
``memory.py`` may only be a read-only copy (``create=False``, no cache); the
front ends hold no ``MemoryCache`` of their own.
"""

from __future__ import annotations

import ast
from pathlib import Path

import copage

SRC = Path(copage.__file__).resolve().parent
FRONT_ENDS = ("adapters/_pool.py", "adapters/agents/paged_session.py", "server/service.py")


def _outside_runtime() -> list[Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if p.relative_to(SRC).parts[0] != "session"
            and p.relative_to(SRC).as_posix() != "memory.py"]


def _name(func: ast.expr) -> str:
    return func.id if isinstance(func, ast.Name) else (
        func.attr if isinstance(func, ast.Attribute) else "")


def test_only_the_opener_loads_or_creates_a_stored_conversation() -> None:
    bad = []
    for path in _outside_runtime():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and _name(node.func) == "PagedMemory"):
                continue
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            if "store" not in kw or "conversation_id" not in kw:
                continue  # a conversation of its own (eval, examples)
            read_only = isinstance(kw.get("create"), ast.Constant) and (
                kw["create"].value is False)  # type: ignore[attr-defined]
            if not read_only:
                bad.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert bad == []


def test_the_front_ends_open_through_the_one_opener() -> None:
    for rel in FRONT_ENDS:
        tree = ast.parse((SRC / rel).read_text(encoding="utf-8"))
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                    and n.module == "copage.session.opening" for a in n.names}
        assert "Conversations" in imported, rel
        calls = {_name(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
        assert "MemoryCache" not in calls, rel  # no cache of its own
        assert "take" not in calls, rel  # the opener takes from the cache
        assert "PagedMemory" not in calls, rel


def test_only_the_opener_deletes_a_stored_conversation() -> None:
    """Deleting (lock, forget the cached copy, delete the rows) is written once, in
    ``Conversations.delete``: the proxy, MCP, the Agents session and ``copage
    conversations`` call it."""
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        # server/commit.py undoes the creation of a conversation whose first turn failed,
        # under the turn's lock: nothing of it was ever cached.
        if rel.startswith("stores/") or rel in ("session/opening.py", "server/commit.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _name(node.func) == "delete_conversation" \
                    and isinstance(node.func, ast.Attribute) \
                    and _name(node.func.value) == "store":
                bad.append(f"{rel}:{node.lineno}")
    assert bad == []
