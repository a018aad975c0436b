"""Judge prompts and tolerant reply parsing (no model is called)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from copage.core.registry import UnknownNameError
from copage.eval.scoring import JUDGE_KINDS, build_judge_messages, parse_judge_reply


@pytest.mark.parametrize("kind", JUDGE_KINDS)
def test_messages_carry_question_gold_and_answer(kind: str) -> None:
    msgs = build_judge_messages(kind, "When did Mel paint?", 2022, "In 2022.")
    assert [m["role"] for m in msgs] == ["system", "user"]
    user = msgs[1]["content"]
    assert "Question: When did Mel paint?" in user
    assert "Gold answer: 2022" in user
    assert "In 2022." in user


def test_scale5_prompt_asks_for_a_1_to_5_json_score() -> None:
    system = build_judge_messages("scale5", "q", "g", "a")[0]["content"]
    assert "1-5" in system and '{"score": N}' in system


def test_binary_prompt_is_generous_on_dates_and_asks_for_a_label() -> None:
    system = build_judge_messages("binary", "q", "g", "a")[0]["content"]
    assert "generous" in system.lower()
    assert "7 May" in system
    assert '{"label": "CORRECT"}' in system and "WRONG" in system


def test_missing_gold_or_answer_is_shown_not_crashed() -> None:
    user = build_judge_messages("binary", "q", None, "  ")[1]["content"]
    assert "Gold answer: (none)" in user and "Generated answer: (empty)" in user


def test_unknown_kind_lists_valid_kinds() -> None:
    with pytest.raises(UnknownNameError, match="scale5, binary"):
        build_judge_messages("likert", "q", "g", "a")
    with pytest.raises(UnknownNameError):
        parse_judge_reply("likert", "Score: 4")


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("Score: 4", 4.0),
        ("score = 2", 2.0),
        ("4/5", 4.0),
        ("I'd give it 3 out of 5.", 3.0),
        ("**4**", 4.0),
        ("The answer matches.\n\n**Score:** 5", 5.0),
        ('{"score": 4}', 4.0),
        ('Reasoning: close.\n```json\n{"Score": "3"}\n```', 3.0),
        ('{"reason": "ok", "rating": 1}', 1.0),
        ("5", 5.0),
        ("  2.\n", 2.0),
        ("Rating: 4.5", 4.5),
        ("A score of 5 needs the date. Score: 3", 3.0),  # the last verdict wins
    ],
)
def test_scale5_reads_common_forms(reply: str, score: float) -> None:
    result = parse_judge_reply("scale5", reply)
    assert result.score == score and result.error is None and result.ok


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("Score: 7", "outside 1-5"),
        ('{"score": 0}', "outside 1-5"),
        ("8/10", "1-10 scale"),
        ('{"score": "high"}', "not a number"),
        ('{"score": true}', "not a number"),
        ("The answer is fine.", "no 1-5 score"),
        ("", "empty reply"),
        ("   ", "empty reply"),
    ],
)
def test_scale5_bad_replies_give_a_reason(reply: str, reason: str) -> None:
    result = parse_judge_reply("scale5", reply)
    assert result.score is None and not result.ok
    assert result.error is not None and reason in result.error


def test_non_string_reply_is_an_error_result() -> None:
    assert parse_judge_reply("binary", None).error == "empty reply"


@pytest.mark.parametrize(
    ("reply", "label", "score"),
    [
        ("CORRECT", "CORRECT", 1.0),
        ("WRONG", "WRONG", 0.0),
        ('{"label": "CORRECT"}', "CORRECT", 1.0),
        ('The date matches.\n{"label": "wrong"}', "WRONG", 0.0),
        ("Same date in another format, so CORRECT.", "CORRECT", 1.0),
        ("The answer is incorrect.", "WRONG", 0.0),
        ("It is NOT CORRECT.", "WRONG", 0.0),
        ("Looks correct to me", "CORRECT", 1.0),
        # upper-case label words beat prose; the final one wins
        ("The answer seems correct at first, but the year differs: WRONG", "WRONG", 0.0),
    ],
)
def test_binary_reads_labels(reply: str, label: str, score: float) -> None:
    result = parse_judge_reply("binary", reply)
    assert (result.label, result.score, result.error) == (label, score, None)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("I cannot tell.", "no CORRECT or WRONG"),
        ('{"label": "MAYBE"}', "neither CORRECT nor WRONG"),
        ('{"label": 1}', "not a string"),
    ],
)
def test_binary_bad_replies_give_a_reason(reply: str, reason: str) -> None:
    result = parse_judge_reply("binary", reply)
    assert result.score is None and result.error is not None and reason in result.error


@given(st.sampled_from(JUDGE_KINDS), st.text(max_size=200))
def test_parsing_never_raises(kind: str, text: str) -> None:
    result = parse_judge_reply(kind, text)
    assert (result.score is None) == (result.error is not None)
    if result.score is not None:
        assert 1.0 <= result.score <= 5.0 if kind == "scale5" else result.score in (0.0, 1.0)
