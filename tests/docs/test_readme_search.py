"""The README's library example, checked for what it promises: ``mem.search("peanut
allergy")`` finds the page where the user said "I'm allergic to peanuts"."""

from __future__ import annotations

from pathlib import Path

from copage import PagedMemory
from copage.eval.paraphrase import synthetic_lines


def test_readme_search_finds_the_allergy_page(tmp_path: Path) -> None:
    # the README's settings, on a SQLite file as there
    mem = PagedMemory(boundary="fixed_10", policy="lru", resident_pages=5,
                      keywords="discriminative", bookmark_format="minimal",
                      store=f"sqlite://{tmp_path / 'chat.db'}", conversation_id="alice")
    mem.add("user", "I'm allergic to peanuts, keep that in mind.")
    mem.add("assistant", "Noted!")
    for line in synthetic_lines(90, seed=0):  # chat about other things: the page is evicted
        mem.add(line.role, line.text)
    allergy = next(p.id for p in mem.pages if "allergic to peanuts" in p.turns[0].text)
    assert allergy in mem.evicted
    hits = mem.search("peanut allergy")
    assert hits and hits[0].page == allergy, hits
