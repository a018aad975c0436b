"""Does a term's closeness in meaning to its page make a better keyword? (Tried, not adopted.)

KeyBERT's idea (Grootendorst 2020): a page's best keywords are the candidate terms whose
sentence embedding is closest to the page's. This adds ``gamma`` x that cosine,
standardised over the page's candidates (so ``gamma`` is in units of the page's own
spread), to the score of ``askable`` (registered as ``meaning-askable``) or
``contrast`` (``meaning-contrast``); the page's vector is the mean of its turns' unit
vectors (all-MiniLM-L6-v2, whichever copy ``find_model`` finds). Then
``bench_keywords.loco``: routing_top1 per development conversation and each fold's
choice among the given specs, scored on the conversation it left out.

    .venv/bin/python tools/keywords_by_meaning.py ../shared/data/locomo/locomo-sample.json \
        ../shared/data/locomo/locomo-more.json \
        --specs askable,contrast,meaning-askable:gamma=0.5,meaning-askable:gamma=1,...

Result: docs/keywords-record.md, "Closeness in meaning (KeyBERT)".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from bench_keywords import loco

from copage.core.keywords import EXTRACTORS
from copage.core.keywords.askable import AskableExtractor
from copage.core.keywords.contrast import ContrastExtractor
from copage.dense import load_encoder

_vectors: dict[str, np.ndarray] = {}


def embed(texts: list[str]) -> np.ndarray:
    """Unit rows of ``texts``, each text encoded once per process."""
    missing = sorted({t for t in texts if t not in _vectors})
    if missing:
        for text, row in zip(missing, load_encoder().encode(missing, batch=64), strict=True):
            _vectors[text] = row
    return np.stack([_vectors[t] for t in texts])


def with_meaning(base: type[ContrastExtractor]) -> Any:
    class ByMeaning(base):  # type: ignore[valid-type, misc]
        def __init__(self, gamma: float = 1.0, **options: Any) -> None:
            super().__init__(**options)
            self.gamma = float(gamma)

        def rank_terms(self, page: Any, corpus: Any, view: Any) -> dict[str, float]:
            out: dict[str, float] = super().rank_terms(page, corpus, view)
            if not out or not self.gamma:
                return out
            centre = embed([t.text or "." for t in page.turns]).mean(0)
            cos = embed(list(out)) @ (centre / np.linalg.norm(centre))
            cos = (cos - cos.mean()) / (cos.std() or 1.0)
            for term, c in zip(list(out), cos, strict=True):
                out[term] += self.gamma * float(c)
            return out
    return ByMeaning


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--specs", required=True, help="comma list, e.g. askable,meaning-askable:gamma=0.5")
    args = p.parse_args()
    EXTRACTORS.register("meaning-askable", lambda **o: with_meaning(AskableExtractor)(**o))
    EXTRACTORS.register("meaning-contrast", lambda **o: with_meaning(ContrastExtractor)(**o))
    loco(args.files, args.specs.split(","), "fixed_10", "lru", 5, "compact", 12.0,
         n_keywords=12, bookmark_tokens=12)


if __name__ == "__main__":
    main()
