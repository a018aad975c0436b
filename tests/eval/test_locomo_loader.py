"""The LoCoMo loader: real files load, messy items are repaired or skipped and counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from copage.eval.datasets import DatasetError, load_locomo, parse_locomo

SAMPLE = Path(__file__).resolve().parents[2].parent / "shared/data/locomo/locomo-sample.json"


def sample(qa: list[dict[str, Any]], **conv: Any) -> dict[str, Any]:
    c: dict[str, Any] = {
        "speaker_a": "Ann", "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a photo of a cat"},
        ],
        "session_2_date_time": "2:00 pm on 9 May, 2023",
        "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "The cat is called Tom."}],
    }
    c.update(conv)
    return {"sample_id": "s1", "conversation": c, "qa": qa}


def test_messy_items_are_repaired_and_counted() -> None:
    qa = [
        {"question": "q1", "answer": "cat", "evidence": ["D1:1; D2:1"], "category": 1},
        {"question": "q2", "answer": 2023, "evidence": ["D1:1"], "category": 2},
        {"question": "q3", "adversarial_answer": "dog", "evidence": ["D2:1"], "category": 5},
        {"question": "q4", "answer": "x", "evidence": [], "category": 4},
        {"question": "q5", "answer": "x", "evidence": ["D9:9"], "category": 4},
        {"question": "q6", "answer": "x", "evidence": ["D1:1", "D7:1"], "category": 4},
        {"question": "", "answer": "x", "evidence": ["D1:1"], "category": 4},
        {"question": "q8", "answer": "x", "evidence": ["D1:1"], "category": 9},
    ]
    ds = parse_locomo([sample(qa)])
    probes = {p.question: p for p in ds.conversations[0].probes}
    assert probes["q1"].evidence == ("D1:1", "D2:1")
    assert probes["q2"].answer == "2023"
    assert probes["q3"].answer is None and probes["q3"].adversarial_answer == "dog"
    assert probes["q6"].evidence == ("D1:1",)
    assert set(probes) == {"q1", "q2", "q3", "q6"}
    assert ds.probes_skipped == {"bad_category": 1, "empty_evidence": 1,
                                 "no_question": 1, "no_usable_evidence": 1}
    assert ds.repairs == {"evidence_split": 1, "evidence_unknown_id": 2}


def test_turns_keep_speakers_sessions_dates_and_captions() -> None:
    ds = parse_locomo([sample([])])
    turns = ds.conversations[0].turns
    assert [t.id for t in turns] == ["D1:1", "D1:2", "D2:1"]
    assert turns[0].role == "user" and turns[1].role == "assistant"
    assert turns[1].meta["blip_caption"] == "a photo of a cat"
    assert turns[2].session == 2 and turns[2].timestamp == "2:00 pm on 9 May, 2023"


def test_duplicate_turn_ids_are_renamed() -> None:
    s = sample([{"question": "q", "answer": "a", "evidence": ["D1:1"], "category": 4}])
    s["conversation"]["session_1"].append({"speaker": "Ann", "dia_id": "D1:1", "text": "dup"})
    ds = parse_locomo([s])
    assert [t.id for t in ds.conversations[0].turns][:3] == ["D1:1", "D1:2", "D1:1#2"]
    assert ds.repairs["duplicate_turn_id"] == 1


@pytest.mark.parametrize(
    "data, message",
    [
        ({"x": 1}, "top level must be a list"),
        ([{"conversation": {}}], r"sample\[0\]: missing field 'sample_id'"),
        ([{"sample_id": "a"}], r"sample\[0\]: missing field 'conversation'"),
        ([{"sample_id": "a", "conversation": {"session_1": [{"speaker": "A", "text": "t"}]}}],
         r"session_1\[0\]: missing field 'dia_id'"),
        ([{"sample_id": "a", "conversation": {"session_1": "oops"}}], "expected a list of turns"),
        ([{"sample_id": "a", "conversation": {"session_1": []}}], "no conversation with turns"),
    ],
)
def test_invalid_structure_names_the_field(data: Any, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        parse_locomo(data, source="f.json")


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.json"
    bad.write_bytes('[{"sample_id": "caf\xe9"}]'.encode("latin-1"))
    with pytest.raises(DatasetError, match="latin1.json: not UTF-8"):
        load_locomo(bad)
    broken = tmp_path / "broken.json"
    broken.write_text('[{"sample_id": ')
    with pytest.raises(DatasetError, match="broken.json: invalid JSON at line 1"):
        load_locomo(broken)
    with pytest.raises(DatasetError, match="cannot read"):
        load_locomo(tmp_path / "missing.json")


def test_empty_conversation_is_left_out_and_counted() -> None:
    empty = {"sample_id": "e", "conversation": {"session_1": []},
             "qa": [{"question": "q", "answer": "a", "evidence": ["D1:1"], "category": 4}]}
    ds = parse_locomo([sample([]), empty])
    assert len(ds.conversations) == 1
    assert ds.probes_skipped == {"empty_conversation": 1}


@pytest.mark.skipif(not SAMPLE.exists(), reason="LoCoMo sample not present")
def test_real_locomo_sample_loads() -> None:
    ds = load_locomo(SAMPLE)
    assert [len(c.turns) for c in ds.conversations] == [419, 369]
    assert ds.probes == 302
    assert ds.probes_skipped == {"empty_evidence": 2}
    assert ds.repairs == {"evidence_split": 1}
    raw = json.loads(SAMPLE.read_text())
    assert sum(len(s["qa"]) for s in raw) == ds.probes + 2


def test_custom_and_integer_turn_ids_are_accepted_as_evidence() -> None:
    """Turn ids need not look like ``D<n>:<n>``; evidence naming them is used, not dropped
    and miscounted as "the file gave none" (issue 11)."""
    conv = {"speaker_a": "Ann", "speaker_b": "Bob", "session_1": [
        {"speaker": "Ann", "dia_id": "t1", "text": "I adopted a cat."},
        {"speaker": "Bob", "dia_id": 7, "text": "Nice!"},
        {"speaker": "Ann", "dia_id": "msg-3", "text": "Her name is Tom."},
    ]}
    qa = [
        {"question": "q1", "answer": "a", "evidence": ["t1"], "category": 4},
        {"question": "q2", "answer": "a", "evidence": [7], "category": 4},
        {"question": "q3", "answer": "a", "evidence": ["7"], "category": 4},
        {"question": "q4", "answer": "a", "evidence": ["t1; msg-3"], "category": 1},
        {"question": "q5", "answer": "a", "evidence": ["x9"], "category": 4},
        {"question": "q6", "answer": "a", "evidence": [" ", None], "category": 4},
    ]
    ds = parse_locomo([{"sample_id": "s", "conversation": conv, "qa": qa}])
    got = {p.question: p.evidence for p in ds.conversations[0].probes}
    assert got == {"q1": ("t1",), "q2": ("7",), "q3": ("7",), "q4": ("t1", "msg-3")}
    assert ds.probes_skipped == {"empty_evidence": 1, "no_usable_evidence": 1}
    assert ds.repairs == {"evidence_split": 1, "evidence_unknown_id": 1}


def test_bad_evidence_items_and_deep_nesting_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"qa\[0\]\.evidence\[0\]: expected a turn id"):
        parse_locomo([sample([{"question": "q", "evidence": [["D1:1"]], "category": 4}])])
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DatasetError, match="deep.json: JSON nested too deeply"):
        load_locomo(deep)
