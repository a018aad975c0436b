"""Porter stemming exactly as the LoCoMo scorer does it (NLTK's ``PorterStemmer()``).

The benchmark's ``task_eval/evaluation.py`` builds ``nltk.stem.PorterStemmer()`` with
its default mode, ``NLTK_EXTENSIONS`` (Porter 1980 plus NLTK's fixes, e.g. "dying" ->
"die"), so copage uses NLTK itself rather than a re-implementation that could drift.
NLTK is imported on first use (it takes about two seconds) and stems are memoised.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache


@lru_cache(maxsize=1)
def _stemmer() -> Callable[[str], str]:
    try:
        from nltk.stem.porter import PorterStemmer
    except ImportError as exc:  # pragma: no cover - nltk is a core dependency
        raise ImportError(
            "LoCoMo F1 needs NLTK's Porter stemmer: pip install nltk (no data download needed)"
        ) from exc
    stem: Callable[[str], str] = PorterStemmer().stem  # default mode: NLTK_EXTENSIONS
    return stem


@lru_cache(maxsize=65536)
def porter_stem(word: str) -> str:
    """Stem one lower-case word with NLTK's default Porter stemmer ("running" -> "run")."""
    return _stemmer()(word)
