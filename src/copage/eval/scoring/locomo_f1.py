"""LoCoMo token F1, category by category, as the benchmark scores it.

Source: Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM
Agents" (ACL 2024), repository snap-research/locomo, ``task_eval/evaluation.py``:
``normalize_answer``, ``f1_score`` (stemmed token F1), ``f1`` (multi-answer) and the
per-category dispatch in ``eval_question_answering``. Re-implemented here, with the
same rules; tests check hand-computed values.
"""

from __future__ import annotations

import re
import string
from collections import Counter

from copage.eval.scoring.categories import check_category
from copage.eval.scoring.stemming import porter_stem

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_ABSTAIN_PHRASES = ("no information available", "not mentioned")

Answer = str | int | float | None


def normalize_answer(text: str) -> str:
    """Drop commas, lower-case, strip ASCII punctuation, drop a/an/the/and, squeeze spaces."""
    text = text.replace(",", "").lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def stemmed_tokens(text: str) -> list[str]:
    """Normalise ``text`` and Porter-stem each whitespace token."""
    return [porter_stem(w) for w in normalize_answer(text).split()]


def f1_score(prediction: str, gold: str) -> float:
    """Token-level F1 of stemmed tokens, with multiset (Counter) overlap; 0 if none shared."""
    pred = stemmed_tokens(prediction)
    ref = stemmed_tokens(gold)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(ref)
    return 2 * precision * recall / (precision + recall)


def f1_multi(prediction: str, gold: str) -> float:
    """Multi-answer F1: mean over comma-separated gold parts of the best prediction part."""
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(f1_score(p, g) for p in preds) for g in golds) / len(golds)


def abstains(prediction: str) -> bool:
    """True if the prediction says "no information available" or "not mentioned"."""
    low = prediction.lower()
    return any(phrase in low for phrase in _ABSTAIN_PHRASES)


def locomo_f1(prediction: str | None, answer: Answer, category: int) -> float:
    """Score one prediction as LoCoMo's ``eval_question_answering`` does.

    Category 1 (multi-hop): :func:`f1_multi`. Categories 2 and 4: :func:`f1_score`.
    Category 3: :func:`f1_score` against the gold cut at its first ';'. Category 5
    (adversarial): 1.0 if the prediction abstains (see :func:`abstains`), else 0.0,
    whatever the answer. Numbers are compared as ``str(answer)``, as in the original.
    A ``None`` answer in categories 1-4 scores 0.0 (the original would compare with
    the string "None"); a ``None`` prediction counts as the empty string.
    """
    cat = check_category(category)
    pred = "" if prediction is None else str(prediction)
    if cat == 5:
        return 1.0 if abstains(pred) else 0.0
    if answer is None:
        return 0.0
    gold = str(answer)
    if cat == 1:
        return f1_multi(pred, gold)
    if cat == 3:
        gold = gold.split(";")[0].strip()
    return f1_score(pred, gold)


def exact_match(prediction: str | None, gold: Answer) -> bool:
    """True if the normalised gold appears, on word boundaries, in the normalised prediction.

    Both sides go through :func:`normalize_answer` (no stemming). An empty or ``None``
    gold never matches.
    """
    if gold is None or prediction is None:
        return False
    ref = normalize_answer(str(gold))
    if not ref:
        return False
    return f" {ref} " in f" {normalize_answer(str(prediction))} "
