"""Synthetic generator: format, determinism, evidence and gold answers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from copage.eval.synthetic import (
    FACT_TYPE_NAMES,
    FACT_TYPES,
    SyntheticConfig,
    generate,
    locomo_datetime,
    mentions,
    mentions_any,
    write_json,
)
from copage.eval.synthetic.filler import all_filler_text
from copage.eval.synthetic.measures import flat_turns

_ID = re.compile(r"D(\d+):(\d+)\Z")
_STAMP = re.compile(r"\d{1,2}:\d\d [ap]m on \d{1,2} [A-Z][a-z]+, \d{4}\Z")
SMALL = SyntheticConfig(
    conversations=6, turns=(40, 50), facts=4, probes=6, distractors=1, topology="mixed", sessions=1
)


@pytest.fixture(scope="module")
def samples() -> list[dict[str, Any]]:
    return generate(SMALL, seed=7)


def _by_id(sample: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["dia_id"]: t for t in flat_turns(sample)}


def test_same_seed_gives_identical_json(tmp_path: Path) -> None:
    a = write_json(generate(SMALL, seed=3), tmp_path / "a.json").read_bytes()
    b = write_json(generate(SMALL, seed=3), tmp_path / "b.json").read_bytes()
    assert a == b


def test_different_seeds_differ() -> None:
    a, b = generate(SMALL, seed=1), generate(SMALL, seed=2)
    assert json.dumps(a) != json.dumps(b)
    assert [s["qa"] for s in a] != [s["qa"] for s in b]


def test_locomo_structure(samples: list[dict[str, Any]]) -> None:
    assert len(samples) == SMALL.conversations
    for i, s in enumerate(samples):
        assert s["sample_id"] == f"synth-custom-s7-{i:02d}"
        conv = s["conversation"]
        assert conv["speaker_a"] == "User" and conv["speaker_b"] == "Assistant"
        assert _STAMP.match(conv["session_1_date_time"])
        turns = flat_turns(s)
        assert SMALL.turns[0] <= len(turns) <= SMALL.turns[1]
        for k, t in enumerate(turns):
            assert set(t) == {"speaker", "dia_id", "text"} and t["text"].strip()
            assert t["speaker"] == ("User" if k % 2 == 0 else "Assistant")
            assert "{" not in t["text"] and "}" not in t["text"], t["text"]
        ids = [t["dia_id"] for t in turns]
        assert len(set(ids)) == len(ids)
        assert ids == [f"D1:{k + 1}" for k in range(len(ids))]


def test_every_evidence_turn_states_the_gold(samples: list[dict[str, Any]]) -> None:
    n = 0
    for s in samples:
        turns = _by_id(s)
        for q in s["qa"]:
            assert isinstance(q["answer"], str) and q["answer"].strip()
            assert q["answer_forms"][0] == q["answer"]
            assert q["evidence"]
            assert q["fact_type"] in FACT_TYPE_NAMES
            assert (q["probe_kind"], q["category"]) in {("direct", 4), ("indirect", 3)}
            for e in q["evidence"]:
                assert _ID.match(e) and e in turns
                assert turns[e]["speaker"] == "User"
                assert mentions_any(turns[e]["text"], q["answer_forms"]), (e, q)
                n += 1
    assert n > 0


def test_evidence_is_every_user_turn_stating_the_latest_value(
    samples: list[dict[str, Any]],
) -> None:
    for s in samples:
        facts = {f["value"]: f for f in s["synthetic"]["facts"]}
        for q in s["qa"]:
            fact = facts[q["answer"]]
            stating = [
                t["dia_id"]
                for t in flat_turns(s)
                if t["speaker"] == "User"
                and t["dia_id"] in fact["turns"]
                and mentions_any(t["text"], q["answer_forms"])
            ]
            assert q["evidence"] == stating
            for d in fact["distractor_turns"]:
                assert d not in q["evidence"]
                assert not mentions_any(_by_id(s)[d]["text"], q["answer_forms"])


def test_no_contradicting_facts_and_updates_are_explicit(
    samples: list[dict[str, Any]],
) -> None:
    for s in samples:
        types = [f["type"] for f in s["synthetic"]["facts"]]
        assert len(types) == len(set(types)) == SMALL.facts
        for f in s["synthetic"]["facts"]:
            if f["value"] != f["initial_value"]:
                assert s["synthetic"]["topology"] == "revisit"
                # the first turn with the new value names the old one: an explicit update
                first_new = next(q["evidence"][0] for q in s["qa"] if q["answer"] == f["value"])
                text = _by_id(s)[first_new]["text"]
                assert f["initial_value"].lower() in text.lower(), text
                assert first_new not in f["turns"][:1]
            assert f["value"] not in f["distractor_values"]
            assert f["initial_value"] not in f["distractor_values"]


def test_filler_never_restates_a_fact_value_or_keyword() -> None:
    forms: set[str] = set()
    for ftype in FACT_TYPES.values():
        for topic in ftype.topics:
            for v in topic.values:
                forms.update(v.forms)
    for text in all_filler_text():
        low = text.lower()
        for ftype in FACT_TYPES.values():
            assert ftype.keyword not in low, (ftype.keyword, text)
        hits = [f for f in forms if mentions(text, f)]
        assert not hits, (hits, text)
        assert not re.search(r"\$\d|\b555-01\d\d\b|@example\.", text)


def test_mentions_respects_token_boundaries() -> None:
    assert mentions("about 1,500 dollars", "1,500 dollars")
    assert not mentions("about 1,500 dollars", "500 dollars")
    assert not mentions("on Tuesdays", "Tuesday") and mentions("on Tuesday.", "Tuesday")
    assert mentions("mail priya.shah@example.com.", "priya.shah@example.com")
    assert not mentions("$1,200", "$1,20")


def test_locomo_datetime_format() -> None:
    import datetime as dt

    assert locomo_datetime(dt.datetime(2023, 5, 8, 13, 56)) == "1:56 pm on 8 May, 2023"
    assert locomo_datetime(dt.datetime(2023, 5, 8, 0, 5)) == "12:05 am on 8 May, 2023"


def test_sessions_knob_numbers_ids_per_session() -> None:
    cfg = SyntheticConfig(conversations=2, turns=(30, 30), facts=2, sessions=3)
    for s in generate(cfg, seed=0):
        conv = s["conversation"]
        assert [k for k in conv if k.startswith("session_") and "date" not in k] == [
            "session_1",
            "session_2",
            "session_3",
        ]
        for n in (1, 2, 3):
            ids = [t["dia_id"] for t in conv[f"session_{n}"]]
            assert ids == [f"D{n}:{k + 1}" for k in range(len(ids))]
            assert conv[f"session_{n}"][0]["speaker"] == "User"
        turns = _by_id(s)
        for q in s["qa"]:
            assert all(e in turns for e in q["evidence"])


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"facts": 8}, "facts must be"),
        ({"facts": 1, "probes": 3}, "two probes per fact"),
        ({"turns": (10, 8)}, "turns must be"),
        ({"turns": (20, 20), "facts": 4, "distractors": 3}, "raise turns"),
        ({"topology": "sideways"}, "topology must be"),
        ({"fact_types": ("allergy", "nope")}, "fact_types must be"),
    ],
)
def test_bad_config_gives_a_clear_error(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SyntheticConfig(**changes)


def test_bad_seed_is_rejected() -> None:
    with pytest.raises(TypeError, match="seed must be an int"):
        generate(SMALL, seed="0")  # type: ignore[arg-type]
