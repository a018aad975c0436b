"""Length bounds of keywords: a pasted blob must not become a huge bookmark.

Without bounds a pasted hex blob was one 9,000-character "word", hence one
keyword and a ``minimal`` bookmark of 2,261 tokens, and a title-cased
200,000-character turn one multi-word "name". Every keyword shown in a
bookmark goes through :func:`bound_keyword` (``make_bookmark`` applies it, so
extractors outside this package are bounded too), and the bookmark formats cut
long words of snippets, gists and fields with :func:`clip_word`. A bookmark of
``n`` keywords therefore costs at most about ``n * MAX_KEYWORD_CHARS / 2``
tokens whatever the page holds.
"""

from __future__ import annotations

from collections.abc import Iterable

MAX_WORD_CHARS = 24
"""Longest word shown whole; a longer one (a hash, a blob, a URL) is cut."""
CLIPPED_WORD_CHARS = 12
"""Characters kept of a cut word (like a short git hash), before the ellipsis."""
MAX_KEYWORD_WORDS = 4
"""Most words in one keyword ("Project Hail Mary" fits; a title-cased sentence does not)."""
MAX_KEYWORD_CHARS = 40
"""Longest keyword, in characters, after cutting its words."""
ELLIPSIS = "\u2026"


def clip_word(word: str) -> str:
    """``word``, or its first ``CLIPPED_WORD_CHARS`` characters and an ellipsis if too long."""
    if len(word) <= MAX_WORD_CHARS:
        return word
    return word[:CLIPPED_WORD_CHARS] + ELLIPSIS


def bound_keyword(keyword: str) -> str:
    """``keyword`` with long words cut, at most ``MAX_KEYWORD_WORDS`` words and
    ``MAX_KEYWORD_CHARS`` characters (cut at a word boundary where possible)."""
    words = keyword.split()
    if len(keyword) <= MAX_KEYWORD_CHARS and len(words) <= MAX_KEYWORD_WORDS and all(
        len(w) <= MAX_WORD_CHARS for w in words
    ):
        return keyword
    kept: list[str] = []
    for word in (clip_word(w) for w in words[:MAX_KEYWORD_WORDS]):
        if kept and len(" ".join([*kept, word])) > MAX_KEYWORD_CHARS:
            break
        kept.append(word)
    out = " ".join(kept)
    return out if len(out) <= MAX_KEYWORD_CHARS else out[: MAX_KEYWORD_CHARS - 1] + ELLIPSIS


def bounded(keywords: Iterable[str]) -> tuple[str, ...]:
    """Every keyword through :func:`bound_keyword`, duplicates (ignoring case) dropped."""
    out: dict[str, str] = {}
    for kw in keywords:
        short = bound_keyword(kw)
        out.setdefault(short.lower(), short)
    return tuple(out.values())
