"""The four bookmark formats, from about 4 to about 90 tokens per bookmark.

``minimal`` is the paper's ``[pN:keywords]``; ``snippet`` adds a quoted
sentence, ``structured`` entity fields, ``gist`` a one-to-two sentence
extractive summary (the paper's format study spans 4 to 91 tokens).
"""

from __future__ import annotations

from copage.core.bookmarks.fields import extract_fields
from copage.core.bookmarks.sentences import (
    best_snippet,
    quote,
    sentences,
    top_sentences,
    truncate_words,
)
from copage.core.prompt import plain_keyword, quoted_data
from copage.core.types import Page

SNIPPET_WORDS = 15
"""Longest snippet, in words."""
GIST_WORDS = 60
"""Longest gist, in words."""
GIST_SENTENCES = 2
"""Sentences in a gist."""


def _check_positive(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


class MinimalFormat:
    """``[p3:kw1, kw2, kw3]``."""

    name = "minimal"

    def render(self, page: Page, keywords: tuple[str, ...]) -> str:
        """The page id and keywords, nothing else."""
        return f"[{page.id}:{', '.join(keywords)}]"


def keyword_list(page: Page, keywords: tuple[str, ...]) -> str:
    """The keyword list as ``minimal`` shows it: what ``bookmark_tokens`` counts for the
    formats that add a sentence or fields (those are bounded by their own options)."""
    return MinimalFormat().render(page, keywords)


class CompactFormat:
    """``[p3: kw1 kw2 kw3]``: the keywords separated by spaces only.

    A comma costs a token of its own in BPE encodings, and so does a keyword glued
    to the colon (``:pottery``); here every further common word costs one token,
    so a 12-token bookmark holds about eight words instead of four keywords.
    """

    name = "compact"

    def render(self, page: Page, keywords: tuple[str, ...]) -> str:
        """The page id and keywords, space-separated."""
        return f"[{page.id}: {' '.join(keywords)}]" if keywords else f"[{page.id}]"


class SnippetFormat:
    """``[p3:kw1, kw2 | "most keyword-dense sentence ..."]``."""

    name = "snippet"
    keyword_text = staticmethod(keyword_list)
    #: Its bookmarks quote the conversation: the index frames them as data.
    quotes = True

    def __init__(self, max_words: int = SNIPPET_WORDS) -> None:
        self.max_words = _check_positive("max_words", max_words)

    def render(self, page: Page, keywords: tuple[str, ...]) -> str:
        """Keywords plus the sentence with most keyword words, cut to ``max_words``."""
        snippet = truncate_words(quoted_data(best_snippet(sentences(page.text), keywords)),
                                 self.max_words)
        tail = f" | {quote(snippet)}" if snippet else ""
        return f"[{page.id}:{', '.join(keywords)}{tail}]"


class StructuredFormat:
    """``[p3 people: Anna, Dr. Lee; dates: May 8; amounts: $450; topics: kw1, Lisbon]``.

    Fields are those of ``fields.extract_fields``: people the text marks as
    people, dates, amounts; other names join the keywords as topics.
    """

    name = "structured"
    keyword_text = staticmethod(keyword_list)

    def render(self, page: Page, keywords: tuple[str, ...]) -> str:
        """Entity fields (empty ones omitted), then the keywords and names not shown already."""
        f = extract_fields(page)
        shown = {v.lower() for v in f.people + f.dates + f.amounts}
        names = tuple(n for n in map(plain_keyword, f.names) if n)
        topics = tuple(dict.fromkeys(k for k in keywords + names if k.lower() not in shown))
        parts = [
            f"{label}: {', '.join(values)}"
            for label, values in (
                ("people", f.people),
                ("dates", f.dates),
                ("amounts", f.amounts),
                ("topics", topics),
            )
            if values
        ]
        return f"[{page.id} {'; '.join(parts)}]" if parts else f"[{page.id}]"


class GistFormat:
    """``[p3:kw1, kw2 — gist: "one or two sentences"]``."""

    name = "gist"
    keyword_text = staticmethod(keyword_list)
    #: Its bookmarks quote the conversation: the index frames them as data.
    quotes = True

    def __init__(self, max_words: int = GIST_WORDS, sentences: int = GIST_SENTENCES) -> None:
        self.max_words = _check_positive("max_words", max_words)
        self.sentences = _check_positive("sentences", sentences)

    def render(self, page: Page, keywords: tuple[str, ...]) -> str:
        """Keywords plus the top sentences by keyword and centroid score, in page order."""
        best = top_sentences(sentences(page.text), keywords, self.sentences)
        gist = truncate_words(quoted_data(" ".join(best)), self.max_words)
        tail = f" \u2014 gist: {quote(gist)}" if gist else ""
        return f"[{page.id}:{', '.join(keywords)}{tail}]"
