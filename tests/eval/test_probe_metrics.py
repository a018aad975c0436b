"""The loop measures (copage.eval.runner.probe_metrics) on hand-made probe records."""

from __future__ import annotations

import math

from copage.eval.runner.probe_metrics import (
    recall_precision,
    right_page_rate,
    speculative_hit_rate,
    trigger_rate,
)
from copage.session import ProbeRecord, RecallRecord


def call(page: str | None, status: str = "paged_in") -> RecallRecord:
    return RecallRecord("c", "recall", "{}", status, page=page)


RECORDS = [
    # needed evicted p1, recalled wrong then right: triggered, right page; 1 of 2 calls good
    ProbeRecord(("p1",), ("p1",), recalls=(call("p2"), call("p1"))),
    # needed evicted p3, recalled only a wrong page
    ProbeRecord(("p3",), ("p3",), recalls=(call("p4"),)),
    # needed evicted p2, never called recall
    ProbeRecord(("p2",), ("p2",)),
    # needed p5, resident: not in the trigger pool; its needless recall of p5 counts as good
    ProbeRecord(("p5",), (), recalls=(call("p5", "resident"),)),
    # evicted p6 paged in speculatively: speculative hit, not in the trigger pool
    ProbeRecord(("p6",), ("p6",), speculative=("p6",)),
    # two needed evicted pages, one speculative: still needs recall; error call
    ProbeRecord(("p7", "p8"), ("p7", "p8"), speculative=("p7",), recalls=(call(None, "error"),)),
]


def test_trigger_rate() -> None:
    r = trigger_rate(RECORDS)
    assert (r.hits, r.total) == (3, 4)  # records 0, 1, 5 triggered; 2 not
    assert float(r) == 0.75


def test_recall_precision_per_call() -> None:
    r = recall_precision(RECORDS)
    assert (r.hits, r.total) == (2, 5)  # p1 (rec 0) and p5 resident (rec 3)


def test_right_page_rate() -> None:
    r = right_page_rate(RECORDS)
    assert (r.hits, r.total) == (1, 3)


def test_speculative_hit_rate() -> None:
    r = speculative_hit_rate(RECORDS)
    assert (r.hits, r.total) == (1, 5)
    assert RECORDS[4].speculative_hit and not RECORDS[5].speculative_hit


def test_empty() -> None:
    r = trigger_rate([])
    assert r.total == 0 and math.isnan(r.value) and str(r) == "n/a (0/0)"
    assert str(trigger_rate(RECORDS)) == "75.0% (3/4)"
