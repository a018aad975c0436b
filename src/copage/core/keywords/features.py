"""Per-term features of a page: the cues that a term will be asked about.

``askable`` (``core/keywords/askable.py``) adds to ``contrast``'s score of each
candidate term of a page a weighted sum of these features, the weights fitted
offline by ``tools/fit_askable.py`` (the shipped ones: the mean of coordinate ascents on
routing_top1; ``--method logit`` fits a conditional logit instead). Every feature is one
already measured as a cue (``docs/keywords-record.md``): the Fightin' Words z-score,
rarity over pages, ``contrast``'s word cues, the everyday-word list, names, and
(ninth round) sentences that say when.

Word-level features of a two-word term are the mean over its words. All are
computed from the page alone except ``z`` and ``rarity`` (the corpus). The
order of :data:`FEATURES` is the order of the weights.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from itertools import pairwise

from copage.core.keywords.common_words import COMMON_WORDS
from copage.core.keywords.terms import lower_words
from copage.core.text import STOPWORDS
from copage.core.types import Page

FEATURES: tuple[str, ...] = (
    "z",  # Fightin' Words z-score of the term, page against the rest
    "rarity",  # ln(pages / pages holding the term)
    "log_count",  # ln of the term's count in the page
    "noun",  # share of words that follow a determiner, possessive or number
    "both_sides",  # share of words used by two speakers in the page
    "past",  # share of -ed words
    "question_only",  # share of words said only in questions
    "in_question",  # share of the words' occurrences inside questions
    "first_person",  # share of the words' occurrences in "I/my/we" sentences
    "common",  # share of everyday words (``common_words``)
    "capitalised",  # shown capitalised (a name) in the page
    "bigram",  # a two-word term
    "length",  # mean characters per word / 10
    "ing",  # share of -ing words
    "plural",  # share of words ending in a single "s"
    "ly",  # share of -ly words
    "digit",  # share of words holding a digit
    "dated",  # share of the words' occurrences in sentences that say when
)
"""Names of the features, in weight order."""

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_WHEN = frozenset([
    "yesterday", "today", "tonight", "tomorrow", "last", "next", "ago", "recently", "just",
    "week", "weekend", "month", "year", "summer", "winter", "spring", "autumn",
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "january", "february", "march", "april", "june", "july", "august", "september",
    "october", "november", "december", "morning", "evening", "since", "soon", "finally",
])
"""Words that say when something happened or will (a sentence holding one dates an event)."""
_FIRST_PERSON = frozenset(["i", "i'm", "i've", "i'd", "i'll", "my", "me", "we", "our", "we're",
                           "we've", "mine", "myself"])
DETERMINERS = frozenset([
    "a", "an", "the", "my", "your", "our", "his", "her", "their", "this", "that", "these",
    "those", "some", "any", "every", "each", "another", "its", "one", "two", "three", "four",
    "five", "few", "several",
])


@dataclass(frozen=True, slots=True)
class WordStats:
    """What one pass over a page's turns says about each content word."""

    count: Counter[str]
    in_question: Counter[str]
    first_person: Counter[str]
    dated: Counter[str]
    noun: frozenset[str]
    both_sides: frozenset[str]


def word_stats(page: Page) -> WordStats:
    """Counts and cues of each content word of ``page`` (one pass over its turns)."""
    count: Counter[str] = Counter()
    in_question: Counter[str] = Counter()
    first_person: Counter[str] = Counter()
    dated: Counter[str] = Counter()
    noun: set[str] = set()
    speakers: defaultdict[str, set[str]] = defaultdict(set)
    stop = STOPWORDS
    for turn in page.turns:
        who = turn.speaker or turn.role
        said: set[str] = set()
        for sentence in _SENTENCE.findall(turn.text.replace("\u2019", "'")):
            toks = lower_words(sentence)
            content = [w for w in toks if len(w) > 1 and w not in stop]  # is_content, inlined
            if not content:
                continue
            count.update(content)
            if sentence.rstrip().endswith("?"):
                in_question.update(content)
            elif not _FIRST_PERSON.isdisjoint(toks):
                first_person.update(content)
            if not _WHEN.isdisjoint(toks):
                dated.update(content)
            said.update(content)
            for prev, word in pairwise(toks):
                if (prev in DETERMINERS or prev[:1].isdigit()) and len(word) > 1 and word not in stop:
                    noun.add(word)
        for word in said:
            speakers[word].add(who)
    both = frozenset(w for w, s in speakers.items() if len(s) > 1)
    return WordStats(count, in_question, first_person, dated, frozenset(noun), both)


def word_features(stats: WordStats) -> dict[str, tuple[float, ...]]:
    """The word-level features (``FEATURES[3:10]`` and ``[12:]``, in order) of each word."""
    out: dict[str, tuple[float, ...]] = {}
    for w, c in stats.count.items():
        out[w] = (
            float(w in stats.noun),
            float(w in stats.both_sides),
            float(w.endswith("ed")),
            float(stats.in_question[w] == c),
            stats.in_question[w] / c,
            stats.first_person[w] / c,
            float(w in COMMON_WORDS),
            len(w) / 10.0,
            float(w.endswith("ing")),
            float(w.endswith("s") and not w.endswith("ss")),
            float(w.endswith("ly")),
            float(not w.isalpha() and any(ch.isdigit() for ch in w)),  # letters are no digits
            stats.dated[w] / c,
        )
    return out


_ZERO_WORD = (0.0,) * 13


def term_static(term: str, count: int, capitalised: bool,
                words: dict[str, tuple[float, ...]]) -> tuple[float, ...]:
    """Corpus-free features of ``term``: every feature but ``z`` and ``rarity``."""
    parts = term.split(" ")
    rows = [words.get(w, _ZERO_WORD) for w in parts]
    mean = [sum(col) / len(rows) for col in zip(*rows, strict=True)]
    return (
        math.log(max(count, 1)),
        *mean[:7],
        float(capitalised),
        float(len(parts) > 1),
        *mean[7:],
    )
