"""``contrast``: keywords for what people ask about, told apart from the other pages.

``discriminative`` picks what is *rare* in a page compared with the rest of the
conversation; in chat that is often a word said once ("swamped", "guts",
"lately"), while questions ask about the things a page talks about ("pottery",
"charity race", "necklace"). ``contrast`` keeps the Fightin' Words z-score (at a
lower weight) and the cross-bookmark penalty of ``discriminative`` and adds cues,
measured on the development data (see ``docs/keywords-record.md``), that a word names
something people will ask about later, cues that hold in any English chat:

* it is not an everyday word (``common_words.COMMON_WORDS``: verbs of saying and
  doing, evaluative adjectives, adverbs, fillers);
* it follows a determiner, a possessive or a number ("a pottery workshop",
  "my necklace", "two cats"): a noun, a thing;
* both sides of the conversation use it in the page: the topic of the exchange,
  not an aside (the user states a fact, the assistant repeats it back);
* it recurs in the page (log of its count);
* it is not a past-tense form (``-ed``) and does not occur only inside questions;
* in a chat with a model (roles, no speaker names), it is part of a name ("a trip to
  Lisbon"): a name is a thing even with no determiner before it (``NAME_CUE``); and
  it is not on most pages (``SPREAD``: what a model repeats names no page).

Words of a two-word term are averaged. A term few pages hold gains
``RARITY * ln(pages / pages holding it)``, and ``contrast`` has no cross-bookmark
penalty by default (``CONTRAST_PENALTY``): both chosen by leave-one-conversation-out
over five LoCoMo conversations (``docs/keywords-record.md``, third round). Phrases, names
("Project Hail Mary"), the number and speaker rules (``routable``) and the greedy
choice are those of ``discriminative``. Cost: O(page), like
``discriminative``.
"""

from __future__ import annotations

import math

from copage.core.keywords.common_words import COMMON_WORDS
from copage.core.keywords.corpus import Corpus
from copage.core.keywords.discriminative import (
    DEFAULT_ALPHA0,
    DiscriminativeExtractor,
    PageView,
)
from copage.core.keywords.features import DETERMINERS as _DETERMINERS
from copage.core.keywords.features import WordStats, word_stats
from copage.core.types import Page

Z_WEIGHT = 0.5
"""Weight of the Fightin' Words z-score (``discriminative`` uses 1)."""
COMMON_PENALTY = 3.0
"""Points off per share of a term's words that are everyday words."""
NOUN_CUE = 0.5
"""Points for a word that follows a determiner, possessive or number somewhere in the page."""
BOTH_SIDES = 0.4
"""Points for a word that two different speakers use in the page."""
RECUR = 0.5
"""Points per natural log of the word's count in the page."""
PAST_TENSE = 1.0
"""Points off for an ``-ed`` word."""
QUESTION_ONLY = 0.8
"""Points off for a word that occurs only in questions."""
NAME_CUE = NOUN_CUE
"""Points for a word of a name that no determiner precedes ("a trip to Lisbon") in a
chat with a model (roles, no speaker names): a name is a thing as much as "a trip"
is. Not tuned (``docs/keywords-record.md``, sixth round)."""
SPREAD = 2.0
"""In a chat with a model, points off per share of pages holding a term beyond
``SPREAD_FROM``: what a model says on most pages ("PhD dream", "previous step")
tells none apart (scikit-learn's ``max_df``, as a penalty). Not applied to named
speakers (LoCoMo), where the held-out protocol rejected it (``docs/keywords-record.md``)."""
SPREAD_FROM = 0.5
"""Share of pages a term may hold before the spread penalty starts."""
SPREAD_MIN_PAGES = 4
"""Pages a conversation needs before a share of pages means anything."""
RARITY = 0.25
"""Points per natural log of (pages / pages holding the term): a term few pages use."""
CONTRAST_PENALTY = 0.0
"""``contrast``'s cross-bookmark penalty (``discriminative`` uses 1.5)."""

DETERMINERS = _DETERMINERS
"""Words after which a word is taken for a noun (``features.DETERMINERS``)."""


def model_chat(page: Page) -> bool:
    """The page is a chat with a model: its turns carry roles and no speaker names
    (``PagedMemory.add(role, text)``, the proxy), not a transcript of named people."""
    return not any(t.speaker and t.speaker.lower() != t.role for t in page.turns)


def spread_line(spread: float, n_pages: int) -> tuple[float, float]:
    """The spread penalty as (points per page holding a term, pages it may hold for
    free): ``spread`` points per share of the ``n_pages`` pages beyond ``SPREAD_FROM``;
    ``(0, 0)`` before ``SPREAD_MIN_PAGES`` pages or with ``spread`` 0."""
    if not spread or n_pages < SPREAD_MIN_PAGES:
        return 0.0, 0.0
    return spread / n_pages, SPREAD_FROM * n_pages


class ContrastExtractor(DiscriminativeExtractor):
    """Fightin' Words at a lower weight plus cues that a word will be asked about."""

    name = "contrast"
    beta: float = 0.0
    """Scale of ``askable``'s fitted corrections (none here)."""
    weights: tuple[float, ...] = ()
    """``askable``'s fitted weights (none here)."""

    def __init__(self, alpha0: float = DEFAULT_ALPHA0, penalty: float = CONTRAST_PENALTY,
                 skip_speakers: bool = True, z_weight: float = Z_WEIGHT,
                 rarity: float = RARITY, cue_weight: float = 1.0,
                 name_cue: float = NAME_CUE, spread: float = SPREAD) -> None:
        super().__init__(alpha0=alpha0, penalty=penalty, skip_speakers=skip_speakers)
        for label, value in (("z_weight", z_weight), ("rarity", rarity),
                             ("cue_weight", cue_weight), ("name_cue", name_cue),
                             ("spread", spread)):
            if not (isinstance(value, int | float) and value >= 0):
                raise ValueError(f"{label} must be a non-negative number, got {value!r}")
        self.z_weight = float(z_weight)
        self.rarity = float(rarity)
        self.cue_weight = float(cue_weight)
        self.name_cue = float(name_cue)
        self.spread = float(spread)

    def static_scores(self, page: Page, view: PageView) -> dict[str, tuple[float, ...]]:
        """(weighted cues, everyday-word penalty) per eligible term (module docstring)."""
        stats = word_stats(page)
        return self.cue_scores(view, cues_from_stats(stats), self.name_words(page, view, stats))

    def name_words(self, page: Page, view: PageView, stats: WordStats) -> frozenset[str]:
        """Words of the page's names that earn ``name_cue`` (no determiner before them):
        only in a chat with a model, whose turns carry roles and no speaker names."""
        if not self.name_cue or not model_chat(page):
            return frozenset()
        return frozenset(w for key in view.named.names for w in key.split(" ")) - stats.noun

    def cue_scores(self, view: PageView, ask: dict[str, float],
                   names: frozenset[str] = frozenset()) -> dict[str, tuple[float, ...]]:
        """(weighted cues, everyday-word penalty) per eligible term, from the word cues
        (plus ``name_cue`` for each of ``names``)."""
        out: dict[str, tuple[float, ...]] = {}
        common_words, cue_weight = COMMON_WORDS, self.cue_weight
        if names:
            ask = {w: c + self.name_cue if w in names else c for w, c in ask.items()}
        for term in view.eligible:
            words = term.split(" ")
            cue = sum([ask.get(w, 0.0) for w in words]) / len(words)
            common = sum([w in common_words for w in words]) / len(words)
            out[term] = (cue_weight * cue, COMMON_PENALTY * common)
        return out

    def rank_terms(self, page: Page, corpus: Corpus, view: PageView) -> dict[str, float]:
        """``z_weight * z`` plus the static cues plus the rarity bonus, minus the spread
        penalty, per eligible term; plus ``askable``'s ``beta`` x fitted features (its
        static scores carry their corpus-free part third)."""
        z = self.z_scores(page, corpus, view, view.eligible)
        static = view.static or {}
        extra = int(page.id not in corpus)
        n_pages = corpus.n_pages + extra
        per_page, free = spread_line(self.spread if model_chat(page) else 0.0, n_pages)
        beta = self.beta
        w_z, w_rarity = (self.weights[0], self.weights[1]) if beta else (0.0, 0.0)
        out: dict[str, float] = {}
        for term, zt in z.items():
            parts = static[term]
            score = self.z_weight * zt + parts[0] - parts[1]
            held = corpus.df(term) + extra
            rare = math.log(n_pages / held)
            if self.rarity:
                score += self.rarity * rare
            if held > free and per_page:
                score -= per_page * (held - free)
            if beta:
                score += beta * (w_z * zt + w_rarity * rare + parts[2])
            out[term] = round(score, 9)
        return out


def word_cues(page: Page) -> dict[str, float]:
    """The askability points of each content word of ``page`` (see the module docstring)."""
    return cues_from_stats(word_stats(page))


def cues_from_stats(stats: WordStats) -> dict[str, float]:
    """:func:`word_cues` from a page's :func:`features.word_stats` (one pass shared)."""
    return {
        w: NOUN_CUE * (w in stats.noun)
        + BOTH_SIDES * (w in stats.both_sides)
        + RECUR * math.log(c)
        - PAST_TENSE * w.endswith("ed")
        - QUESTION_ONLY * (stats.in_question[w] == c)
        for w, c in stats.count.items()
    }
