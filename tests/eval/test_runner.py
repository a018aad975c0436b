"""The runner's JSONL log and aggregation helpers."""

from __future__ import annotations

import pytest

from copage.eval.runner import correct, failures, summarise


def _row(probe: str, **kw: object) -> dict[str, object]:
    return {"dataset": "d", "conversation": "c", "probe": probe, "method": "bookmark_recall",
            "model": "m", **kw}


def test_correct_uses_primary_judge_then_exact_match() -> None:
    judged = {"judges": {"a": {"binary": {"score": 0.0}}, "b": {"binary": {"score": 1.0}}}}
    assert correct(judged) is False
    assert correct({"scores": {"exact_match": 1.0}}) is True
    assert correct({"scores": {"locomo_f1": 0.3}}) is None


def test_failure_analysis_and_recall_metrics() -> None:
    base = {"answer": "x", "needed_pages": ["p1"], "evicted_needed": ["p1"], "scores": {}}
    rows = [
        _row("q0", **base, triggered=True, right_page=True, fact_type="budget",
             tool_calls=[{"tool": "recall", "status": "paged_in", "page": "p1"}],
             judges={"j": {"binary": {"score": 1.0}}}),
        _row("q1", **base, triggered=True, right_page=False, fact_type="budget",
             tool_calls=[{"tool": "recall", "status": "paged_in", "page": "p2"}],
             judges={"j": {"binary": {"score": 0.0}}}),
        _row("q2", **base, triggered=False, right_page=False, fact_type="medical",
             tool_calls=[], judges={"j": {"binary": {"score": 0.0}}}),
    ]
    (all_row, *_) = failures(rows)
    assert (all_row["evicted"], all_row["triggered"], all_row["right_page"]) == (3, 2, 1)
    assert all_row["trigger_rate"] == pytest.approx(2 / 3) and all_row["right_page_rate"] == 0.5
    s = summarise(rows)
    assert s["trigger_rate"] == pytest.approx(2 / 3) and s["recall_precision"] == 0.5
    assert s["right_page_rate"] == 0.5 and s["recall_accuracy"] == pytest.approx(1 / 3)
    assert s["recall_accuracy_ci_low"] < 1 / 3 < s["recall_accuracy_ci_high"]
