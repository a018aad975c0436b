"""The model-driven probe runner: resumable per-probe JSONL, scoring, judges, tables."""

from copage.eval.runner.aggregate import (
    correct,
    failures,
    judge_mean,
    significance,
    summarise,
    table,
)
from copage.eval.runner.judging import UNANSWERABLE_GOLD, gold_of, judge, judge_all, static_scores
from copage.eval.runner.log import KEY_FIELDS, JsonlLog, LogRepairWarning, ProbeLog, row_key
from copage.eval.runner.run import (
    ProbeTask,
    RunStats,
    answer_row,
    base_row,
    run_tasks,
    run_tasks_sync,
)

__all__ = [
    "KEY_FIELDS", "UNANSWERABLE_GOLD", "JsonlLog", "LogRepairWarning", "ProbeLog", "ProbeTask", "RunStats", "answer_row",
    "base_row", "correct", "failures", "gold_of", "judge", "judge_all", "judge_mean", "row_key",
    "run_tasks", "run_tasks_sync", "significance", "static_scores", "summarise", "table",
]
