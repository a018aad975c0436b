"""Prompts for the two LLM judges: a 1-5 quality scale and a binary CORRECT/WRONG label.

``scale5``: the copage paper (section 4) scores LoCoMo answers 1-5 with an LLM judge
given the question, the gold answer and the model's answer. ``binary``: the
LLM-as-a-judge of the mem0 paper (Chhikara et al. 2025, arXiv 2504.19413;
mem0ai/mem0 ``evaluation/metrics/llm_judge.py``), generous on length and on format
(a date written another way is still correct). Wording here is copage's own.
"""

from __future__ import annotations

from copage.core.registry import UnknownNameError

JUDGE_KINDS: tuple[str, ...] = ("scale5", "binary")

_SCALE5_SYSTEM = (
    "You grade answers to questions about a long conversation between two people. "
    "Compare the model's answer with the gold answer and rate it on a 1-5 scale:\n"
    "5 = fully correct: same facts as the gold answer (wording and length may differ)\n"
    "4 = mostly correct: the key fact is right, a minor detail is missing or off\n"
    "3 = partly correct: some of the gold answer is there, with gaps or errors\n"
    "2 = mostly wrong: touches the topic but misses or contradicts the key fact\n"
    "1 = wrong, irrelevant, or no answer\n"
    "Judge only agreement with the gold answer, not style. Reply with one short sentence "
    'of reasoning, then a JSON object on its own line: {"score": N} with N an integer 1-5.'
)

_BINARY_SYSTEM = (
    "You label an answer to a question as CORRECT or WRONG. The question was asked about "
    "what one person in a long conversation should know about the other. You get the "
    "question, a short gold (ground truth) answer, and a generated answer.\n"
    "Be generous: the generated answer may be much longer than the gold answer; if it "
    "is about the same thing as the gold answer and agrees with it, it is CORRECT.\n"
    "For questions about time, the gold answer is a date, month, year or period. A "
    "generated answer that names the same date or period is CORRECT even if it is "
    'written differently (e.g. "May 7th" vs "7 May 2023") or relative to another date '
    '(e.g. "the week before 9 June" for a date in that week).\n'
    "Otherwise it is WRONG. Give a one-sentence reason, then finish with a JSON object "
    'on its own line: {"label": "CORRECT"} or {"label": "WRONG"}. Use only one of the '
    "two words in your label."
)

_SYSTEM = {"scale5": _SCALE5_SYSTEM, "binary": _BINARY_SYSTEM}


def check_kind(kind: str) -> str:
    """Return ``kind`` if it names a judge, else raise UnknownNameError listing the kinds."""
    if kind not in _SYSTEM:
        raise UnknownNameError("judge kind", str(kind), list(JUDGE_KINDS))
    return kind


def _show(value: object) -> str:
    if value is None:
        return "(none)"
    text = str(value).strip()
    return text if text else "(empty)"


def build_judge_messages(
    kind: str, question: str, gold: object, answer: object
) -> list[dict[str, str]]:
    """Chat messages (system + user) asking judge ``kind`` to grade ``answer`` against ``gold``."""
    check_kind(kind)
    user = (
        f"Question: {_show(question)}\n"
        f"Gold answer: {_show(gold)}\n"
        f"{'Model answer' if kind == 'scale5' else 'Generated answer'}: {_show(answer)}"
    )
    return [
        {"role": "system", "content": _SYSTEM[kind]},
        {"role": "user", "content": user},
    ]
