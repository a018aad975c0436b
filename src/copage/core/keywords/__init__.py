"""Keyword extractors: what a bookmark says about its page.

``random``, ``heuristic`` and ``tfidf`` follow the paper's generator study,
``generic`` its category-label baseline; ``discriminative`` (Fightin' Words with a
cross-bookmark penalty), ``contrast`` (that plus cues that a word will be asked
about) and ``askable`` (``contrast`` plus a learned askability score) go beyond it. See ``docs/keywords.md``.
All are offline and deterministic. Build one by name with :func:`get_extractor`.
Each class says whether it reads the corpus (``uses_corpus``) and whether its keywords
change as the corpus grows (``refresh_with_corpus``); the pager asks through
:func:`uses_corpus` / :func:`refreshes_with_corpus` and knows no extractor by name.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

from copage.core.keywords.corpus import Corpus
from copage.core.keywords.extractor import (
    DEFAULT_N_KEYWORDS,
    KeywordExtractor,
    check_n,
    refreshes_with_corpus,
    uses_corpus,
)
from copage.core.registry import Registry, check_options

__all__ = [
    "DEFAULT_N_KEYWORDS",
    "EXTRACTORS",
    "Corpus",
    "KeywordExtractor",
    "check_n",
    "get_extractor",
    "refreshes_with_corpus",
    "uses_corpus",
]


def _made(name: str, cls: Callable[..., KeywordExtractor],
          options: dict[str, object]) -> KeywordExtractor:
    """``cls(**options)``, after checking ``options`` against ``cls``'s keyword
    parameters (``UnknownOptionError`` naming the extractor and its valid options)."""
    allowed = [p for p in inspect.signature(cls).parameters if p != "self"]
    check_options(f"keyword extractor {name!r}", options, allowed)
    return cls(**options)


def _random(**options: object) -> KeywordExtractor:
    from copage.core.keywords.random_tokens import RandomExtractor

    return _made("random", RandomExtractor, options)


def _heuristic(**options: object) -> KeywordExtractor:
    from copage.core.keywords.heuristic import HeuristicExtractor

    return _made("heuristic", HeuristicExtractor, options)


def _tfidf(**options: object) -> KeywordExtractor:
    from copage.core.keywords.tfidf import TfidfExtractor

    return _made("tfidf", TfidfExtractor, options)


def _discriminative(**options: object) -> KeywordExtractor:
    from copage.core.keywords.discriminative import DiscriminativeExtractor

    return _made("discriminative", DiscriminativeExtractor, options)


def _generic(**options: object) -> KeywordExtractor:
    from copage.core.keywords.generic import GenericExtractor

    return _made("generic", GenericExtractor, options)


def _contrast(**options: object) -> KeywordExtractor:
    from copage.core.keywords.contrast import ContrastExtractor

    return _made("contrast", ContrastExtractor, options)


def _askable(**options: object) -> KeywordExtractor:
    from copage.core.keywords.askable import AskableExtractor

    return _made("askable", AskableExtractor, options)


EXTRACTORS: Registry[KeywordExtractor] = Registry("keyword extractor")
EXTRACTORS.register("random", _random)
EXTRACTORS.register("heuristic", _heuristic)
EXTRACTORS.register("tfidf", _tfidf)
EXTRACTORS.register("discriminative", _discriminative)
EXTRACTORS.register("generic", _generic)  # category labels: the paper's Table 12 baseline
EXTRACTORS.register("contrast", _contrast)
EXTRACTORS.register("askable", _askable)  # contrast + a learned askability score (the default)


def get_extractor(name: str, **options: object) -> KeywordExtractor:
    """The keyword extractor called ``name``; raises ``UnknownNameError`` listing valid names.

    Options: ``random(seed=0)``,
    ``discriminative(alpha0=2000.0, penalty=1.5, skip_speakers=True)``,
    ``contrast(alpha0=2000.0, penalty=0.0, skip_speakers=True, z_weight=0.5, rarity=0.25,
    cue_weight=1.0, name_cue=0.5, spread=2.0)``, ``askable(...contrast's..., beta=1.0,
    weights=None)``; ``heuristic``, ``tfidf`` and ``generic`` take none.
    """
    return EXTRACTORS.create(name, **options)
