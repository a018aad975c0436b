"""Scoring of benchmark answers: LoCoMo F1, exact match, LLM judge prompts and parsing.

No model is called here: judges are built (:func:`build_judge_messages`) and their
replies read (:func:`parse_judge_reply`); the caller sends the messages.
"""

from __future__ import annotations

from copage.eval.scoring.categories import (
    CATEGORY_NAMES,
    CATEGORY_NOTE,
    PAPER_ORDER_NAMES,
    category_label,
    check_category,
)
from copage.eval.scoring.judge_parse import (
    JudgeResult,
    parse_binary,
    parse_judge_reply,
    parse_scale5,
)
from copage.eval.scoring.judge_prompts import JUDGE_KINDS, build_judge_messages
from copage.eval.scoring.locomo_f1 import (
    abstains,
    exact_match,
    f1_multi,
    f1_score,
    locomo_f1,
    normalize_answer,
    stemmed_tokens,
)
from copage.eval.scoring.stemming import porter_stem

__all__ = [
    "CATEGORY_NAMES",
    "CATEGORY_NOTE",
    "JUDGE_KINDS",
    "PAPER_ORDER_NAMES",
    "JudgeResult",
    "abstains",
    "build_judge_messages",
    "category_label",
    "check_category",
    "exact_match",
    "f1_multi",
    "f1_score",
    "locomo_f1",
    "normalize_answer",
    "parse_binary",
    "parse_judge_reply",
    "parse_scale5",
    "porter_stem",
    "stemmed_tokens",
]
