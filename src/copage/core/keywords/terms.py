"""Tokens and candidate terms shared by the keyword extractors and the corpus.

A *term* is a lower-cased content word (not a stopword, at least two characters)
or a two-word phrase of adjacent content words (``"thai garden"``): bigrams never
start or end with a stopword and never cross punctuation or a line break.

Speaker prefixes of page text (``"Anna: "``, ``"[tool result c1]: "``) and the
session header lines of ``render_turns`` (``"(session 3, 8 May 2023)"``) are
stripped first: they are rendering, not content (speaker names repeat on every
line; header times would make junk keywords such as ``"56"`` from ``1:56 pm``).
The rule is a regex (one to three capitalised words, or a role name, then a colon
at the start of a line), so a line such as ``"Budget: $450"`` loses its first word
too; that is the price of not needing the turns.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from copage.core.text import CJK, STOPWORDS

_SPEAKER = re.compile(
    r"^[ \t]*(?:\[tool result[^\]\n]*\]"
    r"|[A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}"
    r"|user|assistant|system|tool):[ \t]*",
    re.MULTILINE,
)
_SESSION_HEADER = re.compile(r"^\(session[^\n]*\)[ \t]*$", re.MULTILINE)
_ASCII_TOKEN = re.compile(r"\d+(?:[.,:]\d+)+|[A-Za-z0-9]+(?:'[A-Za-z]+)?")
_TOKEN = re.compile(r"\d+(?:[.,:]\d+)+|[^\W_]+(?:'[^\W\d_]+)?")  # as ASCII's on ASCII
_JOINABLE_GAP = re.compile(r"[ \t]{1,3}|-")
_CJK_ANY = re.compile(f"[{CJK}]")
_SCRIPT_RUN = re.compile(f"[{CJK}]+|[^{CJK}]+")  # "我用iPhone拍照": 我用 | iPhone | 拍照
#: Characters that make a Chinese or Japanese pair a function word, not a keyword:
#: hiragana (Japanese particles and endings; its content words are kanji and katakana)
#: and the commonest Chinese function characters (pronouns, particles, "this", "very").
_CJK_FUNCTION = "\u3040-\u309f的了是在我你他她它们和与也就着把被给让这那个吗呢吧啊呀么什怎很又才之于或并但"
_CJK_CHUNK = re.compile(f"[^{_CJK_FUNCTION}]{{2,}}")
_CHUNK_MAX = 4
_KATAKANA = re.compile("[\u30a0-\u30ff]{2,16}")  # a loanword: one word however long


class Token(NamedTuple):
    """One word of a text: its surface form, lower-cased form and span.

    A named tuple, not a dataclass: a page is tokenized by every extractor step
    and building tuples costs a third of building frozen dataclasses.
    """

    text: str
    lower: str
    start: int
    end: int


def body(text: str) -> str:
    """Page text without speaker prefixes and session headers, with plain apostrophes."""
    return _SPEAKER.sub("", _SESSION_HEADER.sub("", text.replace("\u2019", "'")))


def tokenize(text: str) -> list[Token]:
    """Word tokens of ``text``, with spans.

    A token is a run of letters/digits of any script (inner apostrophe kept:
    ``"don't"``) or a number with separators (``"18,000"``, ``"3.5"``, ``"9:30"``).
    Chinese and Japanese, written without spaces, are cut into word-sized pieces
    (:func:`_cjk_pieces`), so that a keyword is a word, not a whole clause; Latin
    letters or digits inside such a run are tokens of their own (``"我用iPhone拍照"``
    -> ``"iPhone"``, ``"拍照"``).
    """
    out: list[Token] = []
    new = tuple.__new__  # Token(...) without the named tuple's Python-level __new__
    ascii_text = text.isascii()
    for m in (_ASCII_TOKEN if ascii_text else _TOKEN).finditer(text):
        word = m.group()
        start, end = m.span()
        if not ascii_text and _CJK_ANY.search(word):
            for r in _SCRIPT_RUN.finditer(word):
                run, at = r.group(), start + r.start()
                if _CJK_ANY.match(run):
                    out.extend(_cjk_pieces(run, at))
                else:
                    out.append(new(Token, (run, run.lower(), at, at + len(run))))
            continue
        out.append(new(Token, (word, word.lower(), start, end)))
    return out


def _cjk_pieces(run: str, at: int) -> Iterator[Token]:
    """Tokens of a Chinese or Japanese run starting at ``at``: the run is cut at
    function characters (:data:`_CJK_FUNCTION`); a piece of two to four characters is
    a token, a katakana piece (a loanword) too however long, and a longer piece gives
    its overlapping character pairs, as the reader reads it
    (:func:`copage.core.text.words`). Single characters are no tokens."""
    new = tuple.__new__
    for c in _CJK_CHUNK.finditer(run):
        piece, a = c.group(), at + c.start()
        if len(piece) <= _CHUNK_MAX or _KATAKANA.fullmatch(piece):
            yield new(Token, (piece, piece, a, a + len(piece)))
        else:
            for i in range(len(piece) - 1):
                yield new(Token, (piece[i:i + 2], piece[i:i + 2], a + i, a + i + 2))


def lower_words(text: str) -> list[str]:
    """The lower-cased words of :func:`tokenize` (``tok.lower`` of each), without spans."""
    if text.isascii():
        return [word.lower() for word in _ASCII_TOKEN.findall(text)]
    return [tok.lower for tok in tokenize(text)]


def is_content(word: str) -> bool:
    """True for a lower-cased word that is not a stopword and has two or more characters."""
    return len(word) > 1 and word not in STOPWORDS


def joinable(text: str, left: Token, right: Token) -> bool:
    """True when two tokens are adjacent: only spaces or one hyphen between them."""
    if right.start - left.end == 1:  # the usual case, without the regex
        return text[left.end] in " \t-"
    return _JOINABLE_GAP.fullmatch(text, left.end, right.start) is not None


Span = tuple[str, Token, Token]
"""``(term, first, last)``: one occurrence of a term (see :func:`term_spans`)."""


def term_spans(text: str, toks: Sequence[Token] | None = None) -> Iterator[Span]:
    """``(term, first, last)`` for the unigram and bigram terms of ``text``, in text order.

    Each content token is a unigram (``first is last``), preceded by the bigram it
    ends when the previous token is a content token right before it (:func:`joinable`).
    ``toks``: ``tokenize(text)``, when the caller has it already.
    """
    prev: Token | None = None
    stop = STOPWORDS
    for tok in tokenize(text) if toks is None else toks:
        low = tok.lower
        if len(low) < 2 or low in stop:  # not is_content(low), inlined
            prev = None
            continue
        if prev is not None and joinable(text, prev, tok):
            yield f"{prev.lower} {low}", prev, tok
        yield low, tok, tok
        prev = tok


def term_occurrences(text: str) -> list[tuple[str, str]]:
    """``(term, surface)`` pairs of the unigram and bigram terms of ``text``, in text order.

    ``text`` should already be a :func:`body`. Each unigram is followed by the
    bigram it ends, if any.
    """
    return [(term, first.text if first is last else f"{first.text} {last.text}")
            for term, first, last in term_spans(text)]


def term_counts(text: str) -> Counter[str]:
    """Counts of unigram and bigram terms of a page text (speaker prefixes stripped)."""
    return Counter(term for term, _ in term_occurrences(body(text)))


def is_bigram(term: str) -> bool:
    """True for a two-word term."""
    return " " in term


def sentence_initial(text: str, start: int) -> bool:
    """True when position ``start`` of ``text`` opens a sentence or a line."""
    i = start - 1
    while i >= 0 and text[i] in " \t\"'(":
        i -= 1
    return i < 0 or text[i] in ".!?:;\n"


def display_forms(text: str, spans: Iterable[Span] | None = None) -> dict[str, str]:
    """Map each term of a body text to its display form.

    The display form is capitalised when the term appears with a capital letter
    (a two-word term: both words) somewhere other than the start of a sentence (``"Thai Garden"``, ``"Lisbon"``,
    but not ``"Taking"``), else lower-case; a number first written with a currency
    sign keeps it (``"$450"``). ``spans``: ``term_spans(text)``, when the caller has it.
    """
    forms: dict[str, str] = {}
    for term, first, last in term_spans(text) if spans is None else spans:
        named = last.text[:1].isupper() and not sentence_initial(text, last.start)
        if first is not last:
            # A phrase is a name only if all its words are ("San Marzano", not "planted San").
            _offer(forms, term, f"{first.text} {last.text}", named and first.text[:1].isupper())
            continue
        _offer(forms, term, last.text, named)
        money = last.start > 0 and text[last.start - 1] in "$€£" and term[0].isdigit()
        if money and forms[term] == term:
            forms[term] = text[last.start - 1] + term
    return forms


def _offer(forms: dict[str, str], term: str, surface: str, named: bool) -> None:
    """Record ``term`` (in text order); upgrade it to ``surface`` when it reads as a name."""
    if term not in forms or (named and forms[term] == term):
        forms[term] = surface if named else term
