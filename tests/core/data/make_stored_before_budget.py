"""Writes ``stored_before_budget.sql`` and ``stored_before_budget.json`` with the copage
of commit 8a51a7e (paging by turn count: fixed_10, lru, 4 resident pages, batches of 2).

Run with that version's sources first on the path, e.g.::

    git archive 8a51a7e src | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old/src python tests/core/data/make_stored_before_budget.py

The SQL file is a conversation of 84 turns stored at that version's defaults; the JSON
file holds what that version did when the same conversation went on to 140 turns
(its resident and evicted pages), which a reopened conversation must still do.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path

from copage import PagedMemory
from copage.stores.sqlite import SQLiteStore

HERE = Path(__file__).parent
TOPICS = ("garden", "piano", "train", "violin", "river", "kitchen", "ferry")


def line(i: int) -> str:
    """The i-th turn's text (short: 84 turns hold about 1,300 tokens)."""
    return f"Turn {i}: the {TOPICS[i % 7]} plan for week {i // 14}, item {i}."


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "c.db"
        mem = PagedMemory(store=SQLiteStore(db), conversation_id="before")
        for i in range(84):
            mem.add("user" if i % 2 == 0 else "assistant", line(i))
        mem.store.close()
        with sqlite3.connect(db) as conn:
            (HERE / "stored_before_budget.sql").write_text("\n".join(conn.iterdump()) + "\n")
        ref = PagedMemory(conversation_id="ref")
        for i in range(140):
            ref.add("user" if i % 2 == 0 else "assistant", line(i))
        (HERE / "stored_before_budget.json").write_text(json.dumps({
            "made_by": "copage 8a51a7e",
            "at_84": {"resident": mem.resident, "evicted": len(mem.pager.evicted)},
            "at_140": {"resident": ref.resident, "evicted": ref.pager.evicted},
        }, indent=1) + "\n")


if __name__ == "__main__":
    main()
