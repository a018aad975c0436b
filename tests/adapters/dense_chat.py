"""A long chat whose early fact is later asked about in other words, for the front ends'
meaning-channel tests (``dense=DenseRanker(ConceptVectors())``).

The fact and the question share no word, so BM25 alone cannot bring the fact back;
``ConceptVectors`` (a test tool of tests/session/test_dense_fill.py: hand-made concept
axes) points both the same way. The evicted part is far larger than the fill's
allowance (1,024 tokens), so the fill cannot simply show every evicted page.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from copage import PagedMemory, PagerConfig
from copage.stores.inmemory import MemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session"))
from test_dense_fill import FILLER, QUESTION, STATEMENT, ConceptVectors, Gated

__all__ = ["FACT_SHOWN", "PAGING", "QUESTION", "ConceptVectors", "Gated", "history", "seeded"]

PAGING: dict[str, Any] = {"boundary": "fixed_4", "resident_pages": 2}
FACT_SHOWN = "allergic to peanuts"
"""Words of the fact: in what the model is sent exactly when the fact is."""


def history(n: int = 200) -> list[tuple[str, str]]:
    """The fact, its acknowledgement, then ``n`` filler turns (about 3,000 tokens)."""
    out = [("user", STATEMENT), ("assistant", "Thanks for telling me, I'll keep that in mind.")]
    out += [("user" if i % 2 == 0 else "assistant", FILLER[i % len(FILLER)] + f" ({i})")
            for i in range(n)]
    return out


def seeded(conversation_id: str) -> MemoryStore:
    """A store holding :func:`history` paged with ``PAGING`` under ``conversation_id``."""
    store = MemoryStore()
    mem = PagedMemory(store=store, conversation_id=conversation_id, config=PagerConfig(**PAGING))
    with mem.transaction():
        for role, text in history():
            mem.add(role, text)
    assert "p1" in mem.evicted and len(mem.evicted) > 40
    return store
