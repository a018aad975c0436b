"""``generic``: category labels instead of keywords (the paper's Table 12 baseline).

The paper's first bookmarks named the *kind* of information on a page ("personal
preferences", "medical information"), and recall accuracy rose from 65.2% to
90.9% once they named the information itself. This extractor reproduces those
labels offline: each label has a small lexicon of cue words (matched on word
stems by prefix); a page gets the labels with the most cue occurrences, ties in
lexicon order. Like every extractor it returns exactly ``n`` keywords (an empty
page: none): after the cued labels come ``"general conversation"`` and then the
uncued labels in lexicon order, which many pages share, so BM25 gives them little weight.
"""

from __future__ import annotations

from collections.abc import Mapping

from copage.core.keywords.corpus import Corpus
from copage.core.keywords.extractor import BatchByCorpus, check_n
from copage.core.text import words
from copage.core.types import Page

# fmt: off
LEXICON: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("personal preferences", ("prefer", "favorite", "favourite", "like", "love", "hate", "vegetarian", "vegan", "taste", "enjoy")),
    ("medical information", ("medic", "doctor", "allerg", "prescri", "symptom", "diagnos", "hospital", "pill", "dose", "condition", "therap")),
    ("budget and money", ("budget", "money", "price", "cost", "afford", "spend", "dollar", "expens", "cheap", "save", "salary", "$")),
    ("schedule", ("schedul", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "weekly", "practice", "appointment", "meeting", "calendar")),
    ("deadlines and dates", ("deadline", "due", "submit", "date", "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december")),
    ("contact details", ("contact", "phone", "email", "call", "number", "address", "reach")),
    ("food and dining", ("food", "restaurant", "cook", "recipe", "dinner", "lunch", "meal", "eat", "dish")),
    ("travel", ("travel", "trip", "flight", "hotel", "vacation", "visit", "beach", "tour")),
    ("work and career", ("work", "job", "career", "boss", "office", "project", "colleague", "interview")),
    ("family and friends", ("family", "friend", "kid", "child", "mom", "dad", "parent", "sister", "brother", "wife", "husband")),
    ("hobbies", ("hobby", "paint", "music", "guitar", "read", "book", "garden", "photo", "game", "sport", "hike")),
    ("health and fitness", ("health", "fitness", "exercise", "gym", "run", "yoga", "sleep", "diet")),
)
# fmt: on
"""(label, cue prefixes), in tie-breaking order."""

FALLBACK = "general conversation"


def label_counts(text: str) -> list[tuple[str, int]]:
    """Cue occurrences per label (labels with at least one), most first, ties in lexicon order."""
    toks = [w.lower() for w in words(text)]
    dollars = text.count("$")
    counts = []
    for i, (label, cues) in enumerate(LEXICON):
        n = sum(1 for t in toks for c in cues if c != "$" and t.startswith(c))
        n += dollars if "$" in cues else 0
        if n:
            counts.append((-n, i, label))
    return [(label, -neg) for neg, _, label in sorted(counts)]


class GenericExtractor(BatchByCorpus):
    """Up to ``n`` category labels of the page (corpus and ``taken`` unused)."""

    name = "generic"
    uses_corpus = False
    refresh_with_corpus = False

    def extract(
        self, page: Page, corpus: Corpus, n: int, *, taken: Mapping[str, int] | None = None
    ) -> tuple[str, ...]:
        """The page's most-cued labels, padded to ``n`` (see the module docstring)."""
        check_n(n)
        if n == 0 or not words(page.text):
            return ()
        labels = [label for label, _ in label_counts(page.text)]
        rest = [FALLBACK, *(label for label, _ in LEXICON if label not in labels)]
        return tuple((labels + rest)[:n])
