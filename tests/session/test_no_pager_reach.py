"""Nothing outside the core reaches into ``PagedMemory.pager``: callers use PagedMemory."""

from __future__ import annotations

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "copage"
# core/ is the pager's own layer and memory.py owns it. eval/ simulates with bare
# pagers, never mem.pager.
ALLOWED = ("core/", "memory.py")
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
