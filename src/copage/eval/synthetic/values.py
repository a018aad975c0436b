"""Value types of the synthetic generator: fact types, topics, values, rendered turns."""

from __future__ import annotations

import datetime as dt
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

FACT_TYPE_NAMES: tuple[str, ...] = (
    "allergy",
    "budget",
    "deadline",
    "medical",
    "preference",
    "schedule",
    "contact",
)


@dataclass(frozen=True)
class Value:
    """One fact value: ``key`` is the gold answer, ``forms`` its surface forms in text.

    ``forms[0]`` is always ``key``; the others are documented variants (``"1200
    dollars"`` for ``"$1,200"``, ``"March 14th"`` for ``"March 14"``). ``slots`` are
    extra template fields that travel with the value (a medication's dose). The
    first ``spoken`` forms can replace each other in a sentence; the rest only
    match (``"peanut"`` as in "peanut allergy").
    """

    key: str
    forms: tuple[str, ...] = ()
    slots: Mapping[str, str] = field(default_factory=dict)
    spoken: int = 1

    def say(self, rng: random.Random) -> str:
        """A surface form for ``{v}``: one of the first ``spoken`` forms (interchangeable)."""
        return self.forms[rng.randrange(max(1, min(self.spoken, len(self.forms))))]

    def __post_init__(self) -> None:
        if not self.forms or self.forms[0] != self.key:
            object.__setattr__(self, "forms", (self.key, *[f for f in self.forms if f != self.key]))


@dataclass(frozen=True)
class DrawContext:
    """What a dynamic value drawer may look at: the conversation date and fact slots."""

    base_date: dt.date
    slots: Mapping[str, str]


Drawer = Callable[[random.Random, DrawContext], Value]


@dataclass(frozen=True)
class Topic:
    """A subject a fact can be about (the laptop budget, choir practice, the dog sitter).

    ``values`` is the pool (or ``draw`` makes values on demand); ``slot_pools`` are
    per-fact fields drawn once (a contact's name). ``direct``/``indirect`` are probe
    question templates; ``slots`` fixed template fields (``item``); ``overrides``
    replaces the fact type's templates by field name (``statements``, ``acks``...)
    for topics that need their own wording (a seat preference vs a diet).
    """

    name: str
    slots: Mapping[str, str]
    direct: tuple[str, ...]
    indirect: tuple[str, ...]
    values: tuple[Value, ...] = ()
    draw: Drawer | None = None
    slot_pools: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    overrides: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class FactType:
    """A kind of critical information and every way it is said.

    Templates are format strings: ``{v}`` the value's surface form, ``{old}`` the
    superseded value (updates), ``{d}`` a distractor value, ``{d_<slot>}`` the
    distractor's slots, plus the topic's and value's slots. ``keyword`` is the
    generic domain token every distractor shares with the fact's domain (the
    paper's "several pages mention budget" case). ``updates`` empty means the
    fact never changes (an allergy); it is then only re-mentioned.
    """

    name: str
    keyword: str
    topics: tuple[Topic, ...]
    statements: tuple[str, ...]
    acks: tuple[str, ...]
    restates: tuple[str, ...]
    restate_acks: tuple[str, ...]
    distractors: tuple[str, ...]
    distractor_acks: tuple[str, ...]
    updates: tuple[str, ...] = ()
    update_acks: tuple[str, ...] = ()

    def templates(self, topic: Topic, kind: str) -> tuple[str, ...]:
        """The ``kind`` templates (``statements``, ``acks``...) for ``topic``."""
        found: tuple[str, ...] = topic.overrides.get(kind, getattr(self, kind))
        return found


@dataclass(frozen=True)
class Exchange:
    """One user turn and the assistant's reply (``assistant`` empty = no reply)."""

    user: str
    assistant: str


@dataclass(frozen=True)
class Unit:
    """A planned exchange: its text and, for fact turns, which fact it states.

    ``role`` is one of ``statement``, ``restate``, ``update``, ``distractor``,
    ``filler``; ``fact`` indexes the conversation's facts (-1 for filler);
    ``value_key`` the fact value the user turn states (``""`` for none); ``topic``
    the topic block it belongs to (consecutive units with equal topics are one block).
    """

    exchange: Exchange
    role: str
    fact: int = -1
    value_key: str = ""
    topic: str = ""


_BOUNDARY_BEFORE = r"(?<![\w$,.\-@])"
_BOUNDARY_AFTER = r"(?![\w\-@]|[.,]\d)"


def mentions(text: str, form: str) -> bool:
    """Whether ``form`` occurs in ``text`` as a whole token sequence (case-insensitive).

    ``"500 dollars"`` does not match inside ``"1,500 dollars"`` and ``"Tuesday"``
    does not match inside ``"Tuesdays"`` (list ``"Tuesdays"`` as a form instead).
    """
    pattern = _BOUNDARY_BEFORE + re.escape(form) + _BOUNDARY_AFTER
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


def mentions_any(text: str, forms: tuple[str, ...] | list[str]) -> bool:
    """Whether any of ``forms`` occurs in ``text`` (see :func:`mentions`)."""
    return any(mentions(text, f) for f in forms)
