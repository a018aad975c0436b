"""The cooperative loop: :class:`PagedChat` joins a paged memory to a chat model."""

from copage.session.loop import CALLS_AFTER_CAP, PagedChat, RecallLoopError
from copage.session.metrics import (
    Rate,
    recall_precision,
    right_page_rate,
    speculative_hit_rate,
    trigger_rate,
)
from copage.session.report import ProbeRecord, RecallRecord, TurnReport
from copage.session.speculate import DEFAULT_THRESHOLD, Speculation, Speculator

__all__ = [
    "CALLS_AFTER_CAP",
    "DEFAULT_THRESHOLD",
    "PagedChat",
    "ProbeRecord",
    "Rate",
    "RecallLoopError",
    "RecallRecord",
    "Speculation",
    "Speculator",
    "TurnReport",
    "recall_precision",
    "right_page_rate",
    "speculative_hit_rate",
    "trigger_rate",
]
