"""Entity fields of the ``structured`` format: people, dates, amounts and other names.

Only what the text or the turns establish is labelled. ``people`` are the page's
speakers (turn metadata) and names the text itself marks as a person: addressed
("Thanks, Mel!", "Caroline, congrats!"), titled ("Dr. Lee"), introduced by a
relation ("my friend Grace Kim", "her son Oliver"), quoted ("Ana said", "Matt,
he is so talented") or credited with a work ('"Brave" by Sara Bareilles'). Every
other name goes to ``names`` unlabelled: a capital letter does not say whether
"Alfama", "Fado", "Snowflake" or "Bailey" is a person, a place, a genre, a
company or a cat, and the old surface guesses ("people: Maria, Alfama, Fado",
"people: Snowflake") were wrong as often as right. There is no ``places`` field
for the same reason: "went to Rome" and "went to Pride", "at Snowflake" and "at
Lisbon" have the same shape, and telling them apart needs a gazetteer or a
tagger, which the offline core does not ship.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from copage.core.keywords.limits import bound_keyword
from copage.core.keywords.names import INTERJECTIONS, TITLES, find_names
from copage.core.keywords.surface import find_spans
from copage.core.keywords.terms import body
from copage.core.types import Page

ROLES = frozenset({"user", "assistant", "system", "tool"})
MAX_PER_FIELD = 3
"""Most values shown per field."""

# fmt: off
RELATIONS = (
    "friend|friends|buddy|pal|partner|boyfriend|girlfriend|husband|wife|fiance|fiancee|spouse"
    "|mom|mum|mother|dad|father|parent|son|daughter|kid|child|baby|brother|sister|sibling"
    "|cousin|aunt|uncle|niece|nephew|grandma|grandpa|grandmother|grandfather|grandson"
    "|granddaughter|colleague|coworker|co-worker|boss|manager|teammate|classmate|roommate"
    "|flatmate|neighbor|neighbour|teacher|professor|coach|mentor|student|doctor|dentist"
    "|therapist|counselor|lawyer|landlord|landlady|client|customer|assistant"
)
# fmt: on
_RELATION = re.compile(
    rf"\b(?:my|our|your|his|her|their)\s+(?:(?:best|old|new|close|little|big|younger|older)\s+)?"
    rf"(?:{RELATIONS})(?:,)?\s+$",
    re.IGNORECASE,
)
_HONORIFIC = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Mx|Prof)\.?\s([A-Z][\w'-]*(?:\s[A-Z][\w'-]*)?)")
_SAYS = re.compile(
    r"^(?:\s+(?:said|says|told|asked|thinks|wrote|texted|called)\b|,\s+(?:he|she)\s+(?:is|was)\b)"
)
_AUTHOR = re.compile(r"[\"\u201d]\s+by\s+$")  # '"Brave" by Sara Bareilles'

_VOCATIVE_BEFORE = re.compile(
    rf"(?:^|[.!?\n]\s*)(?:{'|'.join(sorted(INTERJECTIONS))})(?:\s+you)?,?\s+$", re.IGNORECASE
)
_VOCATIVE_AFTER = re.compile(r"^\s*[,!]")


@dataclass(frozen=True, slots=True)
class Fields:
    """Entities of a page, each in order of first mention (at most ``MAX_PER_FIELD``)."""

    people: tuple[str, ...]
    dates: tuple[str, ...]
    amounts: tuple[str, ...]
    names: tuple[str, ...]  # other capitalised names: places, products, titles, pets


def _add(items: list[str], value: str) -> None:
    value = bound_keyword(value)
    if value and value.lower() not in {v.lower() for v in items} and len(items) < MAX_PER_FIELD:
        items.append(value)


def _is_person(text: str, start: int, end: int) -> bool:
    """The text marks the name at ``start:end`` as a person (see the module docstring)."""
    before = text[max(0, start - 40) : start]
    after = text[end : end + 12]
    if _RELATION.search(before) or _SAYS.match(after) or _AUTHOR.search(before):
        return True
    if _VOCATIVE_BEFORE.search(before):  # "Thanks, Mel!" / "Hey Caroline"
        return True
    line_start = start == 0 or text[start - 1] == "\n"
    return line_start and bool(_VOCATIVE_AFTER.match(after))  # "Caroline, congrats!"


def people_and_names(page: Page) -> tuple[list[str], list[str]]:
    """All people (speakers first) and all other names of a page, in order, uncapped."""
    speakers = [t.speaker for t in page.turns if t.speaker and t.speaker.lower() not in ROLES]
    people = list(dict.fromkeys(speakers))
    text = body(page.text)
    titled = {m.group(1).lower(): m.group(0) for m in _HONORIFIC.finditer(text)}
    spoken = {s.lower() for s in speakers}
    known = set(spoken)
    found = find_names(text)
    for name in found:
        nickname = len(name.key) >= 3 and any(s.startswith(name.key) for s in spoken)
        if name.key in titled:
            people.append(titled[name.key])
            known.add(name.key)
        elif name.words[0] in TITLES:  # "Dr. Lee": the name finder keeps the title
            people.append(name.text)
            known.add(name.key)
        elif name.key in known or nickname or _is_person(text, name.start, name.end):
            known.add(name.key)
            people.append(name.text)
    others = [n.text for n in found if n.key not in known]
    return list(dict.fromkeys(people)), list(dict.fromkeys(others))


def session_date(timestamp: str) -> str:
    """The date part of a turn timestamp ("1:56 pm on 8 May, 2023" -> "8 May, 2023")."""
    spans = [s for s in find_spans(timestamp) if s.kind == "date"]
    return spans[0].text if spans else timestamp


def extract_fields(page: Page) -> Fields:
    """Entity fields of a page (see the module docstring)."""
    people: list[str] = []
    dates: list[str] = []
    amounts: list[str] = []
    names: list[str] = []
    found_people, found_names = people_and_names(page)
    for value in found_people:
        _add(people, value)
    for value in found_names:
        _add(names, value)
    for span in find_spans(body(page.text)):
        if span.kind == "amount" or (span.kind == "number" and span.text.endswith("%")):
            _add(amounts, span.text)
        elif span.kind == "date":
            _add(dates, span.text)
    for turn in page.turns:
        if turn.timestamp:
            _add(dates, session_date(turn.timestamp))
            break
    return Fields(tuple(people), tuple(dates), tuple(amounts), tuple(names))
