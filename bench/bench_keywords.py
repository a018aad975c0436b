"""Per-page keyword extraction time against corpora of 100 and 10,000 pages.

Shows that ``extract`` with a live corpus costs O(page), not O(conversation):
the time per page should stay about the same when the corpus grows 100-fold.
Run: ``.venv/bin/python bench/bench_keywords.py``.
"""

from __future__ import annotations

import gc
import random
import time

from copage.core.keywords import Corpus, get_extractor
from copage.core.types import Page, Turn, page_id, render_turns

WORDS = [f"word{i}" for i in range(5000)] + ["budget", "medical", "appointment", "Lisbon"]


def synthetic_page(index: int, rng: random.Random, turns: int = 10, words: int = 20) -> Page:
    """A page of ``turns`` turns of ``words`` random words (some capitalised)."""
    ts = tuple(
        Turn(
            id=f"t{index}-{i}",
            role="user",
            speaker="Anna" if i % 2 else "Ben",
            text=" ".join(rng.choice(WORDS) for _ in range(words)) + f" ${rng.randint(1, 999)}.",
        )
        for i in range(turns)
    )
    text = render_turns(ts)
    return Page(page_id(index), index, ts, text, len(text) // 4)


def main() -> None:
    rng = random.Random(0)
    probes = [synthetic_page(100_000 + i, rng) for i in range(50)]
    print(f"{'extractor':15s} {'corpus pages':>12s} {'ms/page':>9s}")
    for size in (100, 10_000):
        corpus = Corpus()
        for i in range(size):
            page = synthetic_page(i, rng)
            corpus.add(page.id, page.text)
        gc.collect()
        gc.freeze()  # keep the corpus out of GC scans: we time extraction, not the collector
        for name in ("random", "heuristic", "tfidf", "discriminative"):
            ex = get_extractor(name)
            taken = {"budget": 3, "medical": 2}
            start = time.perf_counter()
            for page in probes:
                ex.extract(page, corpus, 4, taken=taken)
            ms = (time.perf_counter() - start) * 1000 / len(probes)
            print(f"{name:15s} {size:12d} {ms:9.3f}")
        gc.unfreeze()


if __name__ == "__main__":
    main()
