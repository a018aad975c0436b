"""Which terms a model can route on: not numbers, dates or times alone.

A bookmark of numbers (``[p7:31, 32, 33, 34]``) tells a model nothing about what
its page holds: in chat that mentions numbers on most lines (steps walked, cups
of coffee, "Day 31 check-in") every page's rarest terms are its numbers, so a
statistic that prefers rare terms fills the bookmark with them. A term is
*routable* when at least one of its words names something: a word that is not a
number (``31``, ``9:30``, ``3pm``, ``2nd``), not a date word (weekday or month
name), not a time word (``day``, ``week``, ``hour``, ``today``) and not a title
(``Dr``: the name it opens is kept whole, ``keywords.names``). So ``"day
15"``, ``"march 14"`` and ``"55:46"`` are not keywords on their own, while a
number stays beside what it counts (``"450 flights"``).
"""

from __future__ import annotations

import re

from copage.core.keywords.names import TITLES
from copage.core.types import Page

TIME_WORDS = frozenset(
    [
        "am", "pm", "today", "tonight", "tomorrow", "yesterday", "day", "days", "week",
        "weeks", "weekend", "month", "months", "year", "years", "hour", "hours", "minute",
        "minutes", "min", "mins", "second", "seconds", "sec", "secs", "time", "times",
        "morning", "afternoon", "evening", "night", "noon", "midnight", "date", "dates",
        "o'clock", "oclock", "th", "st", "nd", "rd",
    ]
)
"""Words that only place something in time."""
DATES = frozenset(
    [
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
        "january", "february", "march", "april", "june", "july", "august",
        "september", "october", "november", "december",
    ]
)
"""Weekday and month names written out ("may", "sun", "sat" are ordinary words too)."""

_NUMBER = re.compile(r"[$€£]?\d[\d.,:]*(?:st|nd|rd|th|am|pm|s|k|m)?")


def is_number(word: str) -> bool:
    """True for a number, time or ordinal (``31``, ``18,000``, ``9:30``, ``3pm``, ``2nd``)."""
    return _NUMBER.fullmatch(word.lower()) is not None


def names_something(word: str) -> bool:
    """True for a word that is not a number, a date word, a time word or a title."""
    w = word.lower()
    if w[:1].isalpha():  # not a number (one opens with a digit or a currency sign)
        return not (w in DATES or w in TIME_WORDS or w.rstrip(".") in TITLES)
    return not (is_number(w) or w in DATES or w in TIME_WORDS)


def routable(term: str) -> bool:
    """True when some word of ``term`` names something (see the module docstring)."""
    return any(names_something(w) for w in term.split())


def speaker_words(page: Page) -> set[str]:
    """Lower-cased words of the names of a page's speakers, with their possessives.

    A speaker's name is in almost every question about a two-person chat ("What did
    Caroline paint?"), so a bookmark carrying it matches every question and wins
    questions about other pages. Roles (``user``, ``assistant``) are not names.
    """
    out: set[str] = set()
    for turn in page.turns:
        if turn.speaker and turn.speaker != turn.role:
            for word in turn.speaker.lower().split():
                out |= {word, f"{word}'s"}
    return out
