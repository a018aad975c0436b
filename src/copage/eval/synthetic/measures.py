"""Measures over LoCoMo-format samples: keyword sharing and topic revisits."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from copage.eval.synthetic.values import mentions_any

_SESSION = re.compile(r"session_(\d+)\Z")


def flat_turns(sample: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The sample's turns in order, sessions by number."""
    conv = sample["conversation"]
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION.match(k)))
    return [t for n in numbers for t in conv[f"session_{n}"]]


def keyword_turns(sample: Mapping[str, Any], keyword: str) -> int:
    """Number of turns whose text contains ``keyword`` (case-insensitive substring)."""
    kw = keyword.lower()
    return sum(kw in str(t.get("text", "")).lower() for t in flat_turns(sample))


def revisit_rate(samples: Sequence[Mapping[str, Any]], *, min_gap: int = 6) -> float:
    """Share of probes whose answer comes up again: mentioned in two turns ``min_gap`` apart.

    A probe's answer is its ``answer_forms`` if given, else its ``answer``. Forward
    conversations state a fact once (its acknowledgement is adjacent), so they score
    near 0; revisit conversations near 1. Raises ``ValueError`` without probes.
    """
    revisited = total = 0
    for sample in samples:
        texts = [str(t.get("text", "")) for t in flat_turns(sample)]
        for q in sample.get("qa", []):
            forms = [str(f) for f in q.get("answer_forms") or [q.get("answer", "")] if str(f)]
            if not forms:
                continue
            total += 1
            hits = [i for i, text in enumerate(texts) if mentions_any(text, forms)]
            revisited += bool(hits) and hits[-1] - hits[0] >= min_gap
    if total == 0:
        raise ValueError("revisit_rate: no probes with an answer in the samples")
    return revisited / total
