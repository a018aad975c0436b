"""Choose a fact's topic and values, and render its statement, revisits and distractors."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from copage.eval.synthetic.values import DrawContext, Exchange, FactType, Topic, Value

_DRAW_TRIES = 100


@dataclass(frozen=True)
class Distractor:
    """A confusable value owned by someone or something else, with its own slots."""

    value: Value
    slots: Mapping[str, str]


@dataclass(frozen=True)
class PlantedFact:
    """One planted fact: ``initial`` is stated first; ``latest`` is the gold value.

    ``update_at`` is the index of the revisit that changes the value (-1: never
    changes, ``latest is initial``).
    """

    ftype: FactType
    topic: Topic
    slots: Mapping[str, str]
    initial: Value
    latest: Value
    update_at: int
    distractors: tuple[Distractor, ...]


def draw_value(
    rng: random.Random,
    ftype: FactType,
    topic: Topic,
    ctx: DrawContext,
    exclude: Collection[str],
    *,
    borrow: bool = True,
) -> Value:
    """A value of ``topic`` whose key is not in ``exclude``.

    With ``borrow``, an exhausted pool borrows from the type's other topics (only
    sensible where values do not depend on the topic, like weekdays).
    """
    if topic.draw is not None:
        for _ in range(_DRAW_TRIES):
            v = topic.draw(rng, ctx)
            if v.key not in exclude:
                return v
        raise ValueError(f"{ftype.name}/{topic.name}: no fresh value after {_DRAW_TRIES} draws")
    pool = [v for v in topic.values if v.key not in exclude]
    if not pool and borrow:  # a small pool (weekend days)
        pool = [v for t in ftype.topics for v in t.values if v.key not in exclude]
    if not pool:
        raise ValueError(f"{ftype.name}/{topic.name}: every value is excluded")
    return pool[rng.randrange(len(pool))]


def plant(
    rng: random.Random,
    ftype: FactType,
    base_date: dt.date,
    *,
    n_revisits: int,
    n_distractors: int,
    update_prob: float,
) -> PlantedFact:
    """Draw a topic, slots, the value (and maybe its update) and distractor values."""
    topic = ftype.topics[rng.randrange(len(ftype.topics))]
    slots = dict(topic.slots)
    for name, pool in topic.slot_pools.items():
        slots[name] = rng.choice(pool)
    ctx = DrawContext(base_date, slots)
    initial = draw_value(rng, ftype, topic, ctx, ())
    latest, update_at = initial, -1
    # An update needs a later restatement too, so the new value is stated twice.
    if ftype.updates and n_revisits >= 2 and rng.random() < update_prob:
        update_at = rng.randrange(n_revisits - 1)
        latest = draw_value(rng, ftype, topic, ctx, (initial.key,), borrow=ftype.name == "schedule")
    taken = {initial.key, latest.key}
    distractors: list[Distractor] = []
    for _ in range(n_distractors):
        d_slots = {
            name: rng.choice([x for x in pool if x != slots[name]])
            for name, pool in topic.slot_pools.items()
        }
        d_ctx = DrawContext(base_date, {**slots, **d_slots})
        used = taken | {d.value.key for d in distractors}
        try:
            value = draw_value(rng, ftype, topic, d_ctx, used, borrow=False)
        except ValueError:  # pool exhausted: repeat a distractor value, never the fact's
            value = draw_value(rng, ftype, topic, d_ctx, taken, borrow=ftype.name == "schedule")
        distractors.append(Distractor(value, d_slots))
    return PlantedFact(ftype, topic, slots, initial, latest, update_at, tuple(distractors))


def _fields(fact: PlantedFact, value: Value, spoken: str) -> dict[str, str]:
    return {**fact.slots, **value.slots, "v": spoken, "old": fact.initial.key}


def _pick(rng: random.Random, fact: PlantedFact, kind: str, used: set[str]) -> str:
    """A ``kind`` template, preferring ones not yet in ``used`` (no verbatim repeats)."""
    options = fact.ftype.templates(fact.topic, kind)
    if not options:
        raise ValueError(f"{fact.ftype.name}/{fact.topic.name}: no {kind!r} templates")
    fresh = [t for t in options if t not in used] or list(options)
    choice = fresh[rng.randrange(len(fresh))]
    used.add(choice)
    return choice


def render(
    rng: random.Random, fact: PlantedFact, role: str, value: Value, used: set[str]
) -> Exchange:
    """The exchange stating ``value`` as a ``statement``, ``restate`` or ``update``.

    The user says any spoken form of the value; the assistant echoes the key form.
    ``used`` collects the templates this fact has used so far.
    """
    user_kind, ack_kind = {
        "statement": ("statements", "acks"),
        "restate": ("restates", "restate_acks"),
        "update": ("updates", "update_acks"),
    }[role]
    user = _pick(rng, fact, user_kind, used).format_map(_fields(fact, value, value.say(rng)))
    ack = _pick(rng, fact, ack_kind, used).format_map(_fields(fact, value, value.key))
    return Exchange(_capitalise(user), _capitalise(ack))


def render_distractor(
    rng: random.Random, fact: PlantedFact, index: int, used: set[str]
) -> Exchange:
    """The exchange for the fact's ``index``-th distractor."""
    d = fact.distractors[index]
    fields = {
        **fact.slots,
        **{f"d_{k}": v for k, v in {**d.slots, **d.value.slots}.items()},
        "d": d.value.say(rng),
    }
    user = _pick(rng, fact, "distractors", used).format_map(fields)
    ack = _pick(rng, fact, "distractor_acks", used).format_map(fields)
    return Exchange(_capitalise(user), _capitalise(ack))


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]
