"""Assemble one LoCoMo-format sample: turns, sessions, probes with gold and evidence."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any, Literal

from copage.eval.synthetic.facts import FACT_TYPES
from copage.eval.synthetic.filler import labelled_filler
from copage.eval.synthetic.filler_b import CLOSINGS, GREETINGS
from copage.eval.synthetic.layout import plan_positions
from copage.eval.synthetic.planting import PlantedFact, plant, render, render_distractor
from copage.eval.synthetic.presets import SyntheticConfig
from copage.eval.synthetic.values import Unit

USER, ASSISTANT = "User", "Assistant"
CATEGORY = {"direct": 4, "indirect": 3}  # LoCoMo ids: 4 single-hop, 3 open-domain
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_STATING = ("statement", "restate", "update")


def locomo_datetime(t: dt.datetime) -> str:
    """LoCoMo's timestamp style: ``1:56 pm on 8 May, 2023``."""
    hour = t.hour % 12 or 12
    half = "am" if t.hour < 12 else "pm"
    return f"{hour}:{t.minute:02d} {half} on {t.day} {_MONTHS[t.month - 1]}, {t.year}"


def _random_time(rng: random.Random, day: dt.date) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, rng.randint(8, 22), rng.randint(0, 59))


def build_sample(
    cfg: SyntheticConfig,
    rng: random.Random,
    *,
    sample_id: str,
    types: list[str],
    topology: Literal["forward", "revisit"],
    n_probes: int,
) -> dict[str, Any]:
    """One conversation with its probes, as a LoCoMo sample (plus a ``synthetic`` record)."""
    n_turns = rng.randint(*cfg.turns)
    n_ex = n_turns // 2
    start = dt.date(2023, 1, 1) + dt.timedelta(days=rng.randrange(730))
    revisiting = topology == "revisit"
    counts = [rng.randint(*cfg.revisits) if revisiting else 0 for _ in types]
    early = max(2, round(n_ex * cfg.early_fraction)) if cfg.placement == "early" else None
    plan = plan_positions(
        rng, n_ex, len(types), distractors=cfg.distractors, revisit_counts=counts, early_end=early
    )
    facts = [
        plant(
            rng,
            FACT_TYPES[t],
            start,
            n_revisits=len(plan.revisits[i]),
            n_distractors=cfg.distractors,
            update_prob=cfg.update_prob,
        )
        for i, t in enumerate(types)
    ]
    units: list[Unit | None] = [None] * n_ex
    units[0] = Unit(GREETINGS[rng.randrange(len(GREETINGS))], "filler", topic="greeting")
    for i, fact in enumerate(facts):
        used: set[str] = set()
        units[plan.statements[i]] = Unit(
            render(rng, fact, "statement", fact.initial, used),
            "statement",
            i,
            fact.initial.key,
            f"fact#{i}",
        )
        for j, pos in enumerate(plan.revisits[i]):
            role = "update" if j == fact.update_at else "restate"
            value = fact.initial if 0 <= j < fact.update_at else fact.latest
            units[pos] = Unit(render(rng, fact, role, value, used), role, i, value.key, f"fact#{i}")
        for j, pos in enumerate(plan.distractors[i]):
            units[pos] = Unit(
                render_distractor(rng, fact, j, used), "distractor", i, topic=f"distractor#{i}.{j}"
            )
    free = [p for p, u in enumerate(units) if u is None]
    filler = labelled_filler(rng, len(free), revisit=revisiting)
    for pos, (ex, topic) in zip(free, filler, strict=True):
        units[pos] = Unit(ex, "filler", topic=topic)
    closing = CLOSINGS[rng.randrange(len(CLOSINGS))] if n_turns % 2 else None
    conversation, ids = _sessions(cfg.sessions, [u for u in units if u], closing, start, rng)
    qa = _probes(rng, facts, units, ids, n_probes, revisiting)
    record = [_fact_record(i, f, units, ids) for i, f in enumerate(facts)]
    return {
        "sample_id": sample_id,
        "conversation": conversation,
        "qa": qa,
        "synthetic": {
            "topology": topology,
            "turns": n_turns,
            "facts": record,
            "segments": topic_starts([u.topic for u in units if u], closing is not None),
        },
    }


def topic_starts(topics: list[str], closing: bool) -> list[int]:
    """Gold topic segmentation: the first turn index of each topic block, in order.

    ``topics`` has one label per exchange (two turns each: user, assistant), in
    conversation order; a block is a maximal run of equal labels (a filler family
    block, one fact turn, one distractor, one small-talk exchange, the greeting).
    Indices count turns over the whole conversation (all sessions, reading order)
    from 0; a closing user turn (``closing``) is a block of its own. Session breaks
    are not topic changes and are not added.
    """
    starts = [2 * k for k, t in enumerate(topics) if k == 0 or t != topics[k - 1]]
    return [*starts, 2 * len(topics)] if closing else starts


def _sessions(
    n_sessions: int, units: list[Unit], closing: str | None, start: dt.date, rng: random.Random
) -> tuple[dict[str, Any], list[str]]:
    """Cut exchanges into sessions; returns the conversation and each exchange's user id."""
    conv: dict[str, Any] = {"speaker_a": USER, "speaker_b": ASSISTANT}
    base, extra = divmod(len(units), n_sessions)
    user_ids: list[str] = []
    day, k = start, 0
    for s in range(1, n_sessions + 1):
        size = base + (1 if s <= extra else 0)
        turns: list[dict[str, str]] = []
        for u in units[k : k + size]:
            user_ids.append(f"D{s}:{len(turns) + 1}")
            turns.append({"speaker": USER, "dia_id": user_ids[-1], "text": u.exchange.user})
            turns.append(
                {
                    "speaker": ASSISTANT,
                    "dia_id": f"D{s}:{len(turns) + 1}",
                    "text": u.exchange.assistant,
                }
            )
        if s == n_sessions and closing:
            turns.append({"speaker": USER, "dia_id": f"D{s}:{len(turns) + 1}", "text": closing})
        k += size
        conv[f"session_{s}_date_time"] = locomo_datetime(_random_time(rng, day))
        conv[f"session_{s}"] = turns
        day += dt.timedelta(days=rng.randint(1, 10))
    return conv, user_ids


def _evidence(
    i: int, fact: PlantedFact, units: list[Unit | None], ids: list[str], latest_only: bool
) -> list[str]:
    return [
        ids[p]
        for p, u in enumerate(units)
        if u
        and u.fact == i
        and u.role in _STATING
        and (not latest_only or u.value_key == fact.latest.key)
    ]


def _probes(
    rng: random.Random,
    facts: list[PlantedFact],
    units: list[Unit | None],
    ids: list[str],
    n: int,
    revisiting: bool,
) -> list[dict[str, Any]]:
    """Up to two probes per fact (direct, indirect); returning topics first under revisit."""
    order = list(range(len(facts)))
    rng.shuffle(order)
    if revisiting:  # probes ask about topics that come back
        order.sort(key=lambda i: len(_evidence(i, facts[i], units, ids, False)) < 2)
    firsts = {i: rng.choice(("direct", "indirect")) for i in order}
    picks = [(i, firsts[i]) for i in order]
    picks += [(i, "indirect" if firsts[i] == "direct" else "direct") for i in order]
    qa: list[dict[str, Any]] = []
    for i, kind in picks[:n]:
        fact = facts[i]
        options = fact.topic.direct if kind == "direct" else fact.topic.indirect
        question = options[rng.randrange(len(options))].format_map(dict(fact.slots))
        qa.append(
            {
                "question": question,
                "answer": fact.latest.key,
                "evidence": _evidence(i, fact, units, ids, True),
                "category": CATEGORY[kind],
                "fact_type": fact.ftype.name,
                "probe_kind": kind,
                "answer_forms": list(fact.latest.forms),
            }
        )
    return qa


def _fact_record(
    i: int, fact: PlantedFact, units: list[Unit | None], ids: list[str]
) -> dict[str, Any]:
    return {
        "type": fact.ftype.name,
        "topic": fact.topic.name,
        "keyword": fact.ftype.keyword,
        "value": fact.latest.key,
        "initial_value": fact.initial.key,
        "turns": _evidence(i, fact, units, ids, False),
        "distractor_turns": [
            ids[p] for p, u in enumerate(units) if u and u.fact == i and u.role == "distractor"
        ],
        "distractor_values": [d.value.key for d in fact.distractors],
    }
