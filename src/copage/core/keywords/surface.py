"""Surface features of text: money, dates, numbers and capitalised names.

Used by the ``heuristic`` extractor (the paper's surface extractor) and by the
``structured`` bookmark format. Patterns are tried in priority order (amounts,
dates, numbers, capitalised phrases) and a character belongs to at most one span,
so ``"$450"`` is an amount, not the number ``450``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
    "|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
)
WEEKDAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
HONORIFICS = "Dr|Mr|Mrs|Ms|Prof|St"

_DAY = r"(?:3[01]|[12]\d|0?[1-9])(?:st|nd|rd|th)?(?![\d])"
_MONTH = rf"(?:{MONTHS})\b\.?"
_YEAR = r"(?:1[89]|20)\d\d\b"
_NUM = r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"

AMOUNT = re.compile(
    rf"[$€£¥]\s?{_NUM}(?:\s?(?:k|K|m|M|bn|million|billion|thousand)\b)?"
    rf"|\b{_NUM}\s?(?:dollars|euros|pounds|USD|EUR|GBP)\b"
)
DATE = re.compile(
    r"\b(?:\d{4}-\d{2}-\d{2}\b"
    r"|\d{1,2}/\d{1,2}(?:/\d{2,4})?\b"
    rf"|{_DAY}\s(?:of\s)?{_MONTH}(?:,?\s{_YEAR})?"
    rf"|{_MONTH}\s{_DAY}(?:,?\s{_YEAR})?"
    rf"|{_MONTH}\s{_YEAR}"
    rf"|(?:{WEEKDAYS})\b)"
)
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:]\d+)*(?:%|\s?(?:am|pm)\b)?(?![\w])")
_CAPWORD = r"[A-Z][A-Za-z0-9'&-]*[A-Za-z0-9]"
PHRASE = re.compile(rf"\b(?:(?:{HONORIFICS})\.? )?{_CAPWORD}(?: {_CAPWORD})*")

KIND_ORDER = ("amount", "date", "number", "phrase")
_PATTERNS = {"amount": AMOUNT, "date": DATE, "number": NUMBER, "phrase": PHRASE}


@dataclass(frozen=True, slots=True)
class Span:
    """A surface feature found in text."""

    kind: str  # "amount", "date", "number" or "phrase"
    text: str
    start: int
    end: int


def find_spans(text: str) -> list[Span]:
    """Non-overlapping surface spans of ``text``, in text order (see module docstring)."""
    used = bytearray(len(text))
    spans: list[Span] = []
    for kind in KIND_ORDER:
        for m in _PATTERNS[kind].finditer(text):
            start, end = m.span()
            if any(used[start:end]):
                continue
            used[start:end] = b"\x01" * (end - start)
            spans.append(Span(kind, m.group(0), start, end))
    spans.sort(key=lambda s: s.start)
    return spans


def trim_phrase(phrase: str, stop: frozenset[str]) -> str:
    """Drop leading and trailing words of a capitalised phrase that are in ``stop``."""
    words = phrase.split(" ")
    while words and words[0].lower() in stop:
        words.pop(0)
    while words and words[-1].lower() in stop:
        words.pop()
    if len(words) == 1 and len(words[0]) < 2:
        return ""
    return " ".join(words)
