"""Proper names in text: runs of capitalised words, sentence-initial words sorted out.

A capital letter marks a name in English except at the start of a sentence, so a
*name* here is a run of one to ``MAX_NAME_WORDS`` adjacent capitalised words
("San Marzano", "Project Hail Mary", "ThinkPad T14"), optionally joined by a
lower-case particle ("Bank of America"), with these rules:

* Leading stopwords and interjections are not part of a name ("Thanks Caroline"
  and "It's Shia Labeouf" give "Caroline" and "Shia Labeouf").
* A sentence-initial first word is dropped when the text also uses it in lower
  case or the rest of the run appears on its own elsewhere ("Finished Project Hail
  Mary" next to "Project Hail Mary"); a one-word run that only ever opens
  sentences ("Lately", "Now") is an ordinary word, unless it is all capitals.
* A title opens the name it precedes ("Dr Okafor", "Mrs. Patel": ``TITLES``).
* Pronoun ``I`` and its contractions, weekday and month names (they are dates),
  chat acronyms (``BTW``, ``FYI``) and words longer than ``MAX_WORD_CHARS`` (a
  pasted hash or blob) are never part of a name; a run longer than
  ``MAX_NAME_WORDS`` is a title-cased sentence, not a name.

This is the one name finder of the keyword extractors and the bookmark formats.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from copage.core.keywords.limits import MAX_WORD_CHARS
from copage.core.keywords.terms import (
    Span,
    Token,
    joinable,
    sentence_initial,
    term_spans,
    tokenize,
)
from copage.core.text import STOPWORDS

MAX_NAME_WORDS = 4
"""Longest name, in words (the particles of ``PARTICLES`` included)."""

PARTICLES = frozenset({"of", "de", "la", "le", "van", "von", "der", "del", "da", "di", "du"})
"""Lower-case words allowed inside a name ("Bank of America", "Leonardo da Vinci")."""

# fmt: off
INTERJECTIONS = frozenset(
    [
        "hey", "hi", "hello", "bye", "goodbye", "thanks", "thank", "congrats", "congratulations",
        "wow", "yay", "woohoo", "yep", "yup", "nope", "nah", "sure", "absolutely", "great",
        "awesome", "cool", "nice", "sorry", "please", "dear", "remember", "go", "omg", "ugh",
        "aw", "aww", "haha", "lol", "cheers", "welcome", "morning", "evening", "night", "night",
        "good", "happy", "ok", "okay", "well", "anyway", "btw", "glad", "love", "totally",
    ]
)
CHAT_ACRONYMS = frozenset(
    ["btw", "fyi", "lol", "omg", "imo", "imho", "tbh", "asap", "idk", "brb", "ttyl", "thx",
     "np", "ok", "pls", "aka", "diy", "rsvp", "eta", "faq", "afaik", "ps", "tl", "dr"]
)
DATE_WORDS = frozenset(
    [
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
        "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun",
        "january", "february", "march", "april", "may", "june", "july", "august",
        "september", "october", "november", "december",
        "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    ]
)
# fmt: on
TITLES = frozenset(["dr", "mr", "mrs", "ms", "mx", "prof"])
"""Titles that open a name ("Dr Okafor", "Mrs. Patel"); alone they name no one."""
_NOT_NAME_START = STOPWORDS | INTERJECTIONS
_AFTER_TITLE = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Mx|Prof|St)\.\s*$")
_TITLE_GAP = re.compile(r"\.? ")


def _initial(text: str, tok: Token) -> bool:
    """``tok`` opens a sentence (the full stop of "Dr. Lee" does not end one)."""
    return sentence_initial(text, tok.start) and not _AFTER_TITLE.search(
        text, max(0, tok.start - 6), tok.start
    )


@dataclass(frozen=True, slots=True)
class Name:
    """One occurrence of a name in a text."""

    text: str  # as written, without a final possessive ("Project Hail Mary")
    key: str  # lower-cased ("project hail mary")
    start: int  # character span in the text
    end: int
    words: tuple[str, ...]  # lower-cased words, particles included


def _capitalised(tok: Token) -> bool:
    first = tok.text[0]
    if not first.isalpha() or not first.isupper() or len(tok.text) > MAX_WORD_CHARS:
        return False
    low = tok.lower
    return not (low == "i" or low.startswith("i'") or low in DATE_WORDS or low in CHAT_ACRONYMS)


def _titled(text: str, toks: Sequence[Token], i: int) -> bool:
    """The title ``toks[i]`` ("Dr", "Mrs.", capitalised: the caller checks) is right
    before a capitalised word."""
    return (i + 1 < len(toks)
            and _TITLE_GAP.fullmatch(text, toks[i].end, toks[i + 1].start) is not None
            and _capitalised(toks[i + 1]))


def _runs(text: str, toks: Sequence[Token]) -> list[list[Token]]:
    """Maximal runs of adjacent capitalised words (particles inside allowed), a title
    before a name included ("Dr. Okafor")."""
    runs: list[list[Token]] = []
    cur: list[Token] = []
    after_title = False  # cur is a title that _titled joined to this token
    for i, tok in enumerate(toks):
        if tok.text[0].isupper() and tok.lower in TITLES and _titled(text, toks, i):
            if cur:
                runs.append(cur)
            cur, after_title = [tok], True
            continue
        cap = tok.text[0].isupper() and _capitalised(tok)  # most words: one test
        extends = cap and (not cur or after_title or joinable(text, cur[-1], tok))
        after_title = False
        particle = (
            bool(cur)
            and tok.lower in PARTICLES
            and i + 1 < len(toks)
            and joinable(text, cur[-1], tok)
            and joinable(text, tok, toks[i + 1])
            and _capitalised(toks[i + 1])
        )
        if extends or particle:
            cur.append(tok)
            continue
        if cur:
            runs.append(cur)
        cur = [tok] if cap else []
    if cur:
        runs.append(cur)
    return runs


def find_names(text: str, toks: Sequence[Token] | None = None) -> list[Name]:
    """Occurrences of names in ``text``, in text order (see the module docstring).

    ``toks``: ``tokenize(text)``, when the caller has it already.
    """
    toks = tokenize(text) if toks is None else toks
    lower_used = {t.lower for t in toks if t.text[:1].islower()}
    runs = _runs(text, toks)
    keys = {" ".join(t.lower for t in run) for run in runs}
    midsentence = {
        t.lower for run in runs for t in run if not _initial(text, t)
    }
    out: list[Name] = []
    for run in runs:
        while run and (run[0].lower in _NOT_NAME_START or run[0].lower in PARTICLES):
            run = run[1:]
        while run and run[-1].lower in PARTICLES:
            run = run[:-1]
        if len(run) >= 2 and _initial(text, run[0]) and run[0].lower not in TITLES:
            rest = " ".join(t.lower for t in run[1:])
            if run[0].lower in lower_used or rest in keys:
                run = run[1:]
        if not run or len(run) > MAX_NAME_WORDS:
            continue
        if len(run) == 1:
            tok = run[0]
            acronym = len(tok.text) > 1 and tok.text.isupper()
            if len(tok.text) < 2 or not (acronym or tok.lower in midsentence):
                continue
        start, end = run[0].start, run[-1].end
        words = tuple(t.lower for t in run)
        shown = " ".join(text[start:end].split())
        if shown.endswith("'s") and len(run[-1].text) > 3:  # "Ed Sheeran's" -> "Ed Sheeran"
            shown = shown[:-2]
        out.append(Name(shown, " ".join(words), start, end, words))
    return out


@dataclass(frozen=True, slots=True)
class PageNames:
    """How a page's terms (see ``terms``) relate to its names.

    Attributes:
        names: display form of each name key, in order of first occurrence.
        counts: occurrences of each name key.
        whole: term -> display of the one name it always occurs in ("hail" ->
            "Project Hail Mary"); a term also used outside that name is absent.
        mixed: bigram terms that join a name to a word outside it in at least
            half their occurrences ("planted san", "marzano tomatoes").
    """

    names: dict[str, str]
    counts: dict[str, int]
    whole: dict[str, str]
    mixed: frozenset[str]


def page_names(text: str, toks: Sequence[Token] | None = None,
               spans: Iterable[Span] | None = None) -> PageNames:
    """Names of a body text and how its unigram and bigram terms sit in them.

    ``toks`` and ``spans``: ``tokenize(text)`` and ``term_spans(text, toks)``, when
    the caller has them already (``spans`` only with ``toks``).
    """
    if toks is None:
        toks, spans = tokenize(text), None
    found = find_names(text, toks)
    names: dict[str, str] = {}
    counts: dict[str, int] = {}
    owner: dict[int, int] = {}  # token start -> index into ``found``
    for name in found:
        names.setdefault(name.key, name.text)
        counts[name.key] = counts.get(name.key, 0) + 1
    j = 0
    for tok in toks:
        while j < len(found) and found[j].end <= tok.start:
            j += 1
        if j < len(found) and found[j].start <= tok.start < found[j].end:
            owner[tok.start] = j
    total: dict[str, int] = {}
    inside: dict[str, dict[str, int]] = {}
    mixed_n: dict[str, int] = {}

    def seen(term: str, a: Token, b: Token) -> None:
        total[term] = total.get(term, 0) + 1
        na, nb = owner.get(a.start), owner.get(b.start)
        if na is not None and na == nb:
            per = inside.setdefault(term, {})
            key = found[na].key
            per[key] = per.get(key, 0) + 1
        elif na is not None or nb is not None:
            mixed_n[term] = mixed_n.get(term, 0) + 1

    for term, first, last in term_spans(text, toks) if spans is None else spans:
        seen(term, first, last)
    whole = {
        term: names[next(iter(per))]
        for term, per in inside.items()
        if len(per) == 1 and next(iter(per.values())) == total[term]
    }
    mixed = frozenset(t for t, n in mixed_n.items() if " " in t and 2 * n >= total[t])
    return PageNames(names, counts, whole, mixed)
