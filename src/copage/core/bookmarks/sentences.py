"""Sentences of a page, scored for snippets and gists (offline, deterministic)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from copage.core.keywords.limits import clip_word
from copage.core.keywords.terms import body, is_content, tokenize

_SPLIT = re.compile(
    r"(?<!\bDr\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bSt\.)(?<!\bMrs\.)(?<!\bProf\.)"
    r"(?<=[.!?])\s+|\n+"
)


def sentences(page_text: str) -> list[str]:
    """Sentences of a page's text (speaker prefixes and session headers removed)."""
    return [s.strip() for s in _SPLIT.split(body(page_text)) if s.strip()]


def _content(sentence: str) -> list[str]:
    return [t.lower for t in tokenize(sentence) if is_content(t.lower)]


def _keyword_words(keywords: Sequence[str]) -> set[str]:
    return {t.lower for kw in keywords for t in tokenize(kw) if is_content(t.lower)}


def best_snippet(sents: Sequence[str], keywords: Sequence[str]) -> str:
    """The most keyword-dense sentence (hits, then fewer words, then earlier); "" if none."""
    if not sents:
        return ""
    words = _keyword_words(keywords)

    def key(i: int) -> tuple[int, float, int]:
        content = _content(sents[i])
        hits = len(set(content) & words)
        return (-hits, -hits / math.sqrt(len(content) + 1), i)

    return sents[min(range(len(sents)), key=key)]


def top_sentences(sents: Sequence[str], keywords: Sequence[str], k: int) -> list[str]:
    """The ``k`` best sentences by keyword hits plus centroid similarity, in page order.

    Centroid similarity is the cosine between a sentence's content-word counts and
    the whole page's (the centroid summariser of Radev et al. 2004, in one pass).
    """
    if not sents:
        return []
    vecs = [Counter(_content(s)) for s in sents]
    centroid: Counter[str] = Counter()
    for v in vecs:
        centroid.update(v)
    c_norm = math.sqrt(sum(x * x for x in centroid.values())) or 1.0
    words = _keyword_words(keywords)

    def score(i: int) -> float:
        v = vecs[i]
        norm = math.sqrt(sum(x * x for x in v.values()))
        cos = sum(x * centroid[w] for w, x in v.items()) / (norm * c_norm) if norm else 0.0
        return len(set(v) & words) + cos

    ranked = sorted(range(len(sents)), key=lambda i: (-score(i), i))[:k]
    return [sents[i] for i in sorted(ranked)]


def truncate_words(text: str, max_words: int) -> str:
    """``text`` cut to ``max_words`` words, with "..." when cut; long words cut too."""
    parts = [clip_word(w) for w in text.split()]
    if len(parts) <= max_words:
        return " ".join(parts)
    return " ".join(parts[:max_words]) + " ..."


def quote(text: str) -> str:
    """``text`` in double quotes, inner double quotes made single."""
    return '"' + text.replace('"', "'") + '"'
