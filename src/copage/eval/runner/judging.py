"""Scoring one answer: LoCoMo F1, exact match, and every LLM judge (scale5 and binary)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from copage.eval.datasets.model import Probe
from copage.eval.scoring import (
    JUDGE_KINDS,
    build_judge_messages,
    exact_match,
    locomo_f1,
    parse_judge_reply,
)
from copage.llm.types import ChatModel, ChatRequest

#: The gold shown to judges for a LoCoMo category-5 probe (it has no answer).
UNANSWERABLE_GOLD = "The conversation does not contain this information."


def gold_of(probe: Probe) -> str:
    """The gold answer shown to a judge."""
    if probe.answer is None or probe.category == 5:
        return UNANSWERABLE_GOLD
    return probe.answer


def static_scores(probe: Probe, answer: str, *, synthetic: bool) -> dict[str, Any]:
    """LoCoMo F1 always; ``exact_match`` (normalised gold inside the answer) on synthetic data."""
    out: dict[str, Any] = {"locomo_f1": locomo_f1(answer, probe.answer, probe.category)}
    if synthetic:
        out["exact_match"] = 1.0 if exact_match(answer, probe.answer) else 0.0
    return out


async def judge(model: ChatModel, kind: str, probe: Probe, answer: str,
                max_tokens: int = 200) -> dict[str, Any]:
    """One judge verdict: ``{"score": float|None, "label": ..., "error": ...}``."""
    messages = build_judge_messages(kind, probe.question, gold_of(probe), answer)
    response = await model.complete(ChatRequest(messages=tuple(messages), temperature=0.0,
                                                max_tokens=max_tokens))
    result = parse_judge_reply(kind, response.text)
    return {"score": result.score, "label": result.label, "error": result.error}


async def judge_all(judges: Mapping[str, ChatModel], probe: Probe, answer: str,
                    kinds: tuple[str, ...] = JUDGE_KINDS,
                    max_tokens: int = 200) -> dict[str, dict[str, Any]]:
    """``{judge name: {kind: verdict}}`` for every judge and kind."""
    out: dict[str, dict[str, Any]] = {}
    for name, model in judges.items():
        out[name] = {kind: await judge(model, kind, probe, answer, max_tokens) for kind in kinds}
    return out
