"""Robust parsing of LLM judge replies; never raises on a bad reply.

A reply that cannot be read gives ``JudgeResult(score=None, label=None, error=reason)``
so that a run can count and report unreadable verdicts instead of crashing.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from copage.eval.scoring.judge_prompts import check_kind

SCALE_MIN, SCALE_MAX = 1.0, 5.0

_JSON_OBJECT = re.compile(r"\{[^{}]*\}")
_NUM = r"(-?\d+(?:\.\d+)?)"
_LABELLED = re.compile(
    r"[\"']?\b(?:score|rating|grade)\b[\"']?\s*(?:[:=]|is|of)?\s*\**\s*[\"']?"
    + _NUM
    + r"(?:\s*(?:/|out\s+of)\s*(\d+))?",
    re.IGNORECASE,
)
_FRACTION = re.compile(_NUM + r"\s*(?:/|out\s+of)\s*(\d+)\b", re.IGNORECASE)
_BOLD = re.compile(r"\*\*\s*" + _NUM + r"\s*\*\*")
_BARE = re.compile(r"^\W*" + _NUM + r"\W*$")
_LABEL_WORD = re.compile(r"\b(NOT\s+CORRECT|INCORRECT|CORRECT|WRONG)\b")
_LABEL_WORD_ANY = re.compile(r"\b(not\s+correct|incorrect|correct|wrong)\b", re.IGNORECASE)
_LABEL_KEYS = ("label", "verdict", "judgment", "judgement")
_SCORE_KEYS = ("score", "rating", "grade")


@dataclass(frozen=True)
class JudgeResult:
    """One parsed verdict: ``score`` (1-5, or 1.0/0.0 for binary), ``label``, or ``error``."""

    score: float | None
    label: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True when the reply was read."""
        return self.score is not None


def _fail(reason: str) -> JudgeResult:
    return JudgeResult(score=None, label=None, error=reason)


def _json_values(text: str, keys: tuple[str, ...]) -> list[object]:
    """Values under ``keys`` (case-insensitive) of the flat JSON objects in ``text``."""
    found: list[object] = []
    for chunk in _JSON_OBJECT.findall(text):
        try:
            obj = json.loads(chunk)
        except ValueError:
            continue
        if isinstance(obj, dict):
            lowered = {str(k).lower(): v for k, v in obj.items()}
            found.extend(lowered[k] for k in keys if k in lowered)
    return found


def _scale_result(value: object, scale: str | None = None) -> JudgeResult:
    if scale is not None and int(scale) != int(SCALE_MAX):
        return _fail(f"score given on a 1-{scale} scale, expected 1-5")
    if isinstance(value, bool):
        return _fail(f"score is not a number: {value!r}")
    try:
        score = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return _fail(f"score is not a number: {value!r}")
    if not math.isfinite(score) or not SCALE_MIN <= score <= SCALE_MAX:
        return _fail(f"score {value!r} outside 1-5")
    return JudgeResult(score=score, label=f"{score:g}")


def parse_scale5(text: str) -> JudgeResult:
    """Read a 1-5 score: JSON ``{"score": 4}``, ``Score: 4``, ``4/5``, ``**4**`` or a bare ``4``.

    The last match of the first form found wins (judges put the verdict last). Scores
    may be fractional (3.5) but must lie in [1, 5]; a score on another scale (8/10) or
    outside the range is an error.
    """
    values = _json_values(text, _SCORE_KEYS)
    if values:
        return _scale_result(values[-1])
    for pattern in (_LABELLED, _FRACTION):
        matches = pattern.findall(text)
        if matches:
            number, scale = matches[-1]
            return _scale_result(number, scale or None)
    for pattern in (_BOLD, _BARE):
        matches = pattern.findall(text)
        if matches:
            return _scale_result(matches[-1])
    return _fail("no 1-5 score found in the reply")


def _binary_label(word: str) -> JudgeResult:
    word = " ".join(word.upper().split())
    if word == "CORRECT":
        return JudgeResult(score=1.0, label="CORRECT")
    if word in ("WRONG", "INCORRECT", "NOT CORRECT"):
        return JudgeResult(score=0.0, label="WRONG")
    return _fail(f"label {word!r} is neither CORRECT nor WRONG")


def parse_binary(text: str) -> JudgeResult:
    """Read CORRECT/WRONG: JSON ``{"label": "CORRECT"}`` first, else the last label word.

    Upper-case words are preferred over lower-case prose; INCORRECT and "not correct"
    count as WRONG.
    """
    values = _json_values(text, _LABEL_KEYS)
    if values:
        value = values[-1]
        if not isinstance(value, str):
            return _fail(f"label is not a string: {value!r}")
        return _binary_label(value)
    for pattern in (_LABEL_WORD, _LABEL_WORD_ANY):
        matches = pattern.findall(text)
        if matches:
            return _binary_label(matches[-1])
    return _fail("no CORRECT or WRONG label found in the reply")


def parse_judge_reply(kind: str, text: object) -> JudgeResult:
    """Parse a judge reply of ``kind`` ("scale5" or "binary"); unreadable -> error, no raise."""
    check_kind(kind)
    if not isinstance(text, str) or not text.strip():
        return _fail("empty reply")
    return parse_scale5(text) if kind == "scale5" else parse_binary(text)
