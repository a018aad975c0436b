"""Entity fields of the ``structured`` format: people, places, dates, amounts."""

from __future__ import annotations

import re
from dataclasses import dataclass

from copage.core.keywords.heuristic import HEURISTIC_STOPWORDS
from copage.core.keywords.surface import HONORIFICS, find_spans, trim_phrase
from copage.core.keywords.terms import body, sentence_initial
from copage.core.types import Page

ROLES = frozenset({"user", "assistant", "system", "tool"})
_PLACE_CUE = re.compile(r"\b(?:in|at|to|from|near|visit|visiting|visited)\s+(?:the\s+)?$")
_HONORIFIC = re.compile(rf"(?:{HONORIFICS})\.? ")
_MONTH_ONLY = frozenset({"may", "march", "june", "july", "august"})
MAX_PER_FIELD = 3


@dataclass(frozen=True, slots=True)
class Fields:
    """Named entities of a page, each in order of first mention."""

    people: tuple[str, ...]
    places: tuple[str, ...]
    dates: tuple[str, ...]
    amounts: tuple[str, ...]
    other: tuple[str, ...]  # other capitalised names: products, acronyms, titles


def _add(items: list[str], value: str) -> None:
    if value and value.lower() not in {v.lower() for v in items} and len(items) < MAX_PER_FIELD:
        items.append(value)


def extract_fields(page: Page) -> Fields:
    """Entity fields of a page by surface heuristics.

    People: speaker names, then single capitalised words (not sentence-initial)
    and titled names ("Dr. Lee"). Places: names after "in/at/to/from/near/visit".
    Dates: date expressions, then the first turn timestamp. Amounts: money and
    percentages. Other: multi-word or all-caps names ("MacBook Pro", "LGBTQ").
    """
    people: list[str] = []
    places: list[str] = []
    dates: list[str] = []
    amounts: list[str] = []
    other: list[str] = []
    for turn in page.turns:
        if turn.speaker and turn.speaker.lower() not in ROLES:
            _add(people, turn.speaker)
    text = body(page.text)
    for span in find_spans(text):
        if span.kind == "amount" or (span.kind == "number" and span.text.endswith("%")):
            _add(amounts, span.text)
        elif span.kind == "date":
            _add(dates, span.text)
        elif span.kind == "phrase":
            name = trim_phrase(span.text, HEURISTIC_STOPWORDS)
            if not name or name.lower() in _MONTH_ONLY:
                continue
            if _PLACE_CUE.search(text, max(0, span.start - 20), span.start):
                _add(places, name)
            elif _HONORIFIC.match(name):
                _add(people, name)
            elif name.isupper() or " " in name:
                _add(other, name)
            elif not sentence_initial(text, span.start) or name != span.text:
                _add(people, name)
    for turn in page.turns:
        if turn.timestamp:
            _add(dates, turn.timestamp)
            break
    return Fields(tuple(people), tuple(places), tuple(dates), tuple(amounts), tuple(other))
