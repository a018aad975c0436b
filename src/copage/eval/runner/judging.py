"""Scoring one answer: LoCoMo F1, exact match, and every LLM judge (scale5 and binary)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from copage.eval.datasets.probes import Probe
from copage.eval.scoring import (
    JUDGE_KINDS,
    build_judge_messages,
    exact_match,
    locomo_f1,
    parse_judge_reply,
)
from copage.llm.model_types import ChatModel, ChatRequest

#: The gold shown to judges for a LoCoMo category-5 probe (it has no answer).
UNANSWERABLE_GOLD = "The conversation does not contain this information."


def gold_of(probe: Probe) -> str:
    """The gold answer shown to a judge."""
    if probe.answer is None or probe.category == 5:
        return UNANSWERABLE_GOLD
    return probe.answer


def answer_forms(probe: Probe) -> tuple[str, ...]:
    """Accepted surface forms of the gold answer: the answer and the generator's
    ``answer_forms`` (synthetic data: "April 6" and "April 6th", "$1,200" and
    "twelve hundred bucks")."""
    forms = [probe.answer] if probe.answer is not None else []
    extra = probe.meta.get("answer_forms") if probe.meta else None
    if isinstance(extra, (list, tuple)):
        forms += [str(f) for f in extra if str(f).strip()]
    return tuple(dict.fromkeys(forms))


def exact_any(answer: str | None, probe: Probe) -> bool:
    """Exact match (:func:`copage.eval.scoring.exact_match`) against any answer form."""
    return any(exact_match(answer, form) for form in answer_forms(probe))


def static_scores(probe: Probe, answer: str, *, synthetic: bool) -> dict[str, Any]:
    """LoCoMo F1 always; ``exact_match`` (a normalised answer form inside the answer) on
    synthetic data."""
    out: dict[str, Any] = {"locomo_f1": locomo_f1(answer, probe.answer, probe.category)}
    if synthetic:
        out["exact_match"] = 1.0 if exact_any(answer, probe) else 0.0
    return out


@dataclass(slots=True)
class Usage:
    """Model calls made (answering or judging), replies the cache gave instead, their cost."""

    calls: int = 0
    cache_hits: int = 0
    cost: float | None = None

    def add(self, calls: int, cache_hits: int, cost: float | None) -> None:
        """Count more calls."""
        self.calls += calls
        self.cache_hits += cache_hits
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost


async def judge(model: ChatModel, kind: str, probe: Probe, answer: str,
                max_tokens: int = 200, usage: Usage | None = None) -> dict[str, Any]:
    """One judge verdict: ``{"score": float|None, "label": ..., "error": ..., "template": ...}``.

    ``template`` fingerprints the judge prompts (a verdict from other prompts is stale).
    """
    from copage.eval.methods.templates import judge_template_id

    messages = build_judge_messages(kind, probe.question, gold_of(probe), answer)
    response = await model.complete(ChatRequest(messages=tuple(messages), temperature=0.0,
                                                max_tokens=max_tokens))
    if usage is not None:  # a cached reply costs nothing and makes no call
        usage.add(0 if response.cached else 1, int(response.cached),
                  None if response.cached else response.cost_usd)
    result = parse_judge_reply(kind, response.text)
    return {"score": result.score, "label": result.label, "error": result.error,
            "template": judge_template_id()}


def missing_verdicts(verdicts: Mapping[str, Any] | None, judges: Mapping[str, ChatModel],
                     kinds: tuple[str, ...] = JUDGE_KINDS) -> dict[str, tuple[str, ...]]:
    """Per judge, the kinds whose verdict is absent or came from other judge prompts."""
    from copage.eval.methods.templates import judge_template_id

    current = judge_template_id()
    out: dict[str, tuple[str, ...]] = {}
    for name in judges:
        have = (verdicts or {}).get(name) or {}
        todo = tuple(k for k in kinds
                     if not isinstance(have.get(k), Mapping) or have[k].get("template") != current)
        if todo:
            out[name] = todo
    return out


async def judge_all(judges: Mapping[str, ChatModel], probe: Probe, answer: str,
                    kinds: tuple[str, ...] = JUDGE_KINDS, max_tokens: int = 200,
                    usage: Usage | None = None,
                    verdicts: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """``{judge name: {kind: verdict}}`` for every judge and kind.

    ``verdicts``: verdicts already made (a resumed row); only the missing or stale
    ones are asked for, the others are kept.
    """
    out: dict[str, dict[str, Any]] = {k: dict(v) for k, v in (verdicts or {}).items()}
    for name, todo in missing_verdicts(verdicts, judges, kinds).items():
        model = judges[name]
        got = out.setdefault(name, {})
        for kind in todo:
            got[kind] = await judge(model, kind, probe, answer, max_tokens, usage)
    return out
