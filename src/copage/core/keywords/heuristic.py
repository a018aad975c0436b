"""``heuristic``: the paper's surface extractor.

Candidates are dollar amounts, dates, numbers and capitalised multi-character
tokens (adjacent ones merged into one phrase, ``"Thai Garden"``), filtered by a
60-word stopword list. They are ranked by frequency in the page, then by kind
(amount, date, multi-word phrase, number, single name), then by first occurrence.
When fewer than ``n`` remain, the most frequent content words fill the rest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from copage.core.keywords.corpus import Corpus
from copage.core.keywords.extractor import BatchByCorpus, check_n
from copage.core.keywords.limits import MAX_KEYWORD_WORDS, bounded
from copage.core.keywords.surface import find_spans, trim_phrase
from copage.core.keywords.terms import body, is_content, sentence_initial, tokenize
from copage.core.types import Page

# fmt: off
HEURISTIC_STOPWORDS: frozenset[str] = frozenset(
    [
        "the", "a", "an", "i", "i'm", "i've", "i'll", "you", "we", "he", "she", "it", "they", "my",
        "your", "this", "that", "and", "but", "or", "so", "if", "then", "for", "with", "to", "in",
        "on", "at", "of", "what", "when", "where", "why", "how", "who", "is", "are", "was", "do",
        "can", "yes", "no", "not", "oh", "hey", "hi", "hello", "wow", "yeah", "thanks", "thank",
        "ok", "okay", "sure", "well", "just", "also", "let's", "good",
    ]
)
# fmt: on
"""The heuristic's 60 stopwords: function words that open sentences with a capital."""

_KIND_RANK = {"amount": 0, "date": 1, "multiword": 2, "number": 3, "phrase": 4}


def heuristic_candidates(text: str) -> list[str]:
    """Ranked surface candidates of a body text (display forms, distinct ignoring case).

    A single capitalised word seen only at the start of sentences ("Ask", "Last")
    is taken for an ordinary word, not a name, and left out; this refines the
    paper's description, whose extractor otherwise emits such words.
    """
    counts: Counter[str] = Counter()
    first: dict[str, tuple[int, str, str]] = {}  # key -> (position, kind, display)
    named: set[str] = set()  # keys seen at least once where a capital means a name
    for span in find_spans(text):
        display = span.text
        kind = span.kind
        if kind == "phrase":
            display = trim_phrase(display, HEURISTIC_STOPWORDS)
            if not display:
                continue
            if display.count(" ") >= MAX_KEYWORD_WORDS:
                continue  # a title-cased sentence, not a name
            kind = "multiword" if " " in display else "phrase"
            untrimmed = span.text.split(" ", 1)[0] == display.split(" ", 1)[0]
            if kind == "multiword" or not (untrimmed and sentence_initial(text, span.start)):
                named.add(display.lower())
        elif kind == "number" and len(display) < 2:
            continue
        else:
            named.add(display.lower())
        key = display.lower()
        counts[key] += 1
        first.setdefault(key, (span.start, kind, display))
    keys = [k for k in counts if k in named]
    ranked = sorted(keys, key=lambda k: (-counts[k], _KIND_RANK[first[k][1]], first[k][0]))
    return [first[k][2] for k in ranked]


class HeuristicExtractor(BatchByCorpus):
    """Money, dates, numbers and capitalised names of the page (corpus and ``taken`` unused)."""

    name = "heuristic"
    uses_corpus = False
    refresh_with_corpus = False

    def extract(
        self, page: Page, corpus: Corpus, n: int, *, taken: Mapping[str, int] | None = None
    ) -> tuple[str, ...]:
        """Up to ``n`` surface keywords of ``page``, topped up with frequent content words."""
        check_n(n)
        text = body(page.text)
        chosen = heuristic_candidates(text)[:n]
        if len(chosen) < n:
            used = {w for kw in chosen for w in kw.lower().split()}
            words = [t.lower for t in tokenize(text) if is_content(t.lower) and t.lower not in used]
            freq = Counter(words)
            order = {w: i for i, w in reversed(list(enumerate(words)))}
            for w in sorted(freq, key=lambda w: (-freq[w], order[w]))[: n - len(chosen)]:
                chosen.append(w)
        return bounded(chosen)
