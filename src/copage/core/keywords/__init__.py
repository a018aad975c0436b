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


def _random(**options: object) -> KeywordExtractor:
    from copage.core.keywords.random_tokens import RandomExtractor

    check_options("keyword extractor 'random'", options, ["seed"])
    return RandomExtractor(**options)  # type: ignore[arg-type]


def _heuristic(**options: object) -> KeywordExtractor:
    from copage.core.keywords.heuristic import HeuristicExtractor

    check_options("keyword extractor 'heuristic'", options, [])
    return HeuristicExtractor()


def _tfidf(**options: object) -> KeywordExtractor:
    from copage.core.keywords.tfidf import TfidfExtractor

    check_options("keyword extractor 'tfidf'", options, [])
    return TfidfExtractor()


def _discriminative(**options: object) -> KeywordExtractor:
    from copage.core.keywords.discriminative import DiscriminativeExtractor

    check_options("keyword extractor 'discriminative'", options, ["alpha0", "penalty", "skip_speakers"])
    return DiscriminativeExtractor(**options)  # type: ignore[arg-type]


EXTRACTORS: Registry[KeywordExtractor] = Registry("keyword extractor")
EXTRACTORS.register("random", _random)
EXTRACTORS.register("heuristic", _heuristic)
EXTRACTORS.register("tfidf", _tfidf)
EXTRACTORS.register("discriminative", _discriminative)


def _generic(**options: object) -> KeywordExtractor:
    from copage.core.keywords.generic import GenericExtractor

    check_options("keyword extractor 'generic'", options, [])
    return GenericExtractor()


EXTRACTORS.register("generic", _generic)  # category labels: the paper's Table 12 baseline


def _contrast(**options: object) -> KeywordExtractor:
    from copage.core.keywords.contrast import ContrastExtractor

    check_options("keyword extractor 'contrast'", options,
                  ["alpha0", "penalty", "skip_speakers", "z_weight", "rarity", "cue_weight",
                   "name_cue", "spread"])
    return ContrastExtractor(**options)  # type: ignore[arg-type]


EXTRACTORS.register("contrast", _contrast)


def _askable(**options: object) -> KeywordExtractor:
    import inspect

    from copage.core.keywords.askable import AskableExtractor

    allowed = [p for p in inspect.signature(AskableExtractor).parameters if p != "self"]
    check_options("keyword extractor 'askable'", options, allowed)
    return AskableExtractor(**options)  # type: ignore[arg-type]


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
