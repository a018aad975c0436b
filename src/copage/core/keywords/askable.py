"""``askable``: ``contrast`` with its cues re-weighted for routing, fitted held out.

``contrast`` scores a term by the Fightin' Words z-score plus hand-weighted cues
that it will be asked about (``contrast.py``). ``askable`` adds to that score
``beta`` times a weighted sum of per-term features (``features.FEATURES``: the
same cues, the z-score, rarity over pages, names, phrases, word shapes). The
weights (``askable_weights``) were fitted by ``tools/fit_askable.py`` on the
routing measure itself (routing_top1 of the simulation, fixed_10 + LRU, k = 5,
the shipped bookmarks: ``compact``, 12 keywords offered, a 12-token cap): the
mean of coordinate ascents from ``contrast`` (all weights 0), each on four of the
five LoCoMo development conversations. Fitted on four and scored on the fifth,
the same procedure scored a held-out mean of 0.416 against ``contrast``'s 0.392
(``docs/keywords-record.md``, ninth round). The fitted weights are small corrections:
words in sentences that say when, names, words asked about in the page and
first-person statements higher; words said only in questions, two-word phrases
and ``-ly`` words lower.

Cost: ``contrast``'s plus one pass over the page's turns (word statistics),
kept with the page's analysis, so a refresh costs only the corpus-dependent
scores.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

from copage.core.keywords.askable_weights import ASKABLE_WEIGHTS
from copage.core.keywords.contrast import (
    CONTRAST_PENALTY,
    NAME_CUE,
    RARITY,
    SPREAD,
    Z_WEIGHT,
    ContrastExtractor,
    cues_from_stats,
)
from copage.core.keywords.corpus import Corpus
from copage.core.keywords.discriminative import DEFAULT_ALPHA0, PageView
from copage.core.keywords.features import FEATURES, term_static, word_features, word_stats
from copage.core.types import Page

ASKABLE_BETA = 1.0
"""Scale of the fitted corrections (0: ``contrast``)."""


class AskableExtractor(ContrastExtractor):
    """``contrast``'s score plus ``beta`` x fitted feature weights (module docstring)."""

    name = "askable"

    def __init__(self, alpha0: float = DEFAULT_ALPHA0, penalty: float = CONTRAST_PENALTY,
                 skip_speakers: bool = True, z_weight: float = Z_WEIGHT, rarity: float = RARITY,
                 cue_weight: float = 1.0, beta: float = ASKABLE_BETA,
                 weights: Sequence[float] | None = None, name_cue: float = NAME_CUE,
                 spread: float = SPREAD) -> None:
        super().__init__(alpha0=alpha0, penalty=penalty, skip_speakers=skip_speakers,
                         z_weight=z_weight, rarity=rarity, cue_weight=cue_weight,
                         name_cue=name_cue, spread=spread)
        if not (isinstance(beta, int | float) and math.isfinite(beta) and beta >= 0):
            raise ValueError(f"beta must be a finite non-negative number, got {beta!r}")
        try:
            w = ASKABLE_WEIGHTS if weights is None else tuple(weights)
        except TypeError:
            w = ()
        if len(w) != len(FEATURES) or not all(isinstance(x, int | float) and math.isfinite(x)
                                               for x in w):
            raise ValueError(f"weights must be {len(FEATURES)} finite numbers "
                             f"(one per feature: {', '.join(FEATURES)}), got {weights!r}")
        self.beta = float(beta)
        self.weights = tuple(float(x) for x in w)

    def static_scores(self, page: Page, view: PageView) -> dict[str, tuple[float, ...]]:
        """``contrast``'s (cues, everyday penalty) and the weighted corpus-free features.

        One pass over the page's turns serves both (``word_stats``); kept with the
        page's analysis, so a refresh adds two products to ``contrast``'s work.
        """
        stats = word_stats(page)
        base = self.cue_scores(view, cues_from_stats(stats), self.name_words(page, view, stats))
        w = self.weights
        word_w = w[3:10] + w[12:]
        per_word = {word: sum(map(operator.mul, word_w, f))  # both of length 13
                    for word, f in word_features(stats).items()}
        counts, forms, log = view.counts, view.forms, math.log
        out: dict[str, tuple[float, ...]] = {}
        for term in view.eligible:
            words = term.split(" ")
            fixed = (w[2] * log(max(counts[term], 1))
                     + w[10] * (forms.get(term, term) != term)
                     + w[11] * (len(words) > 1))
            cue, common = base[term]
            out[term] = (cue, common, fixed + sum([per_word.get(x, 0.0) for x in words]) / len(words))
        return out

    def features(self, page: Page, corpus: Corpus, view: PageView) -> dict[str, tuple[float, ...]]:
        """The ``FEATURES`` vector of every eligible term of ``page`` (for fitting: it
        reads the page's turns again)."""
        z = self.z_scores(page, corpus, view, view.eligible)
        words = word_features(word_stats(page))
        extra = int(page.id not in corpus)
        n_pages = corpus.n_pages + extra
        return {term: (zt, math.log(n_pages / (corpus.df(term) + extra)),
                       *term_static(term, view.counts[term], view.forms.get(term, term) != term,
                                    words))
                for term, zt in z.items()}
