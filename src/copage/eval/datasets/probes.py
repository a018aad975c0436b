"""Conversations with probes: copage's interchange format, read from LoCoMo-format files."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from copage.core.types import Turn


class DatasetError(ValueError):
    """A structurally invalid dataset file; the message names the file and the field."""


@dataclass(frozen=True, slots=True)
class Probe:
    """A question about the conversation with the turns that hold its answer.

    Attributes:
        id: ``"<sample_id>/q<index>"`` (index in the file's ``qa`` list).
        question: the question text.
        answer: the gold answer as text (numbers converted), ``None`` when the file
            gives none (LoCoMo category 5 has ``adversarial_answer`` instead).
        category: LoCoMo category id (1 multi-hop, 2 temporal, 3 open-domain,
            4 single-hop, 5 adversarial).
        evidence: usable evidence turn ids (all exist in the conversation).
        adversarial_answer: LoCoMo's category-5 distractor answer, if any.
        fact_type: for synthetic probes, the planted fact's type.
    """

    id: str
    question: str
    answer: str | None
    category: int
    evidence: tuple[str, ...]
    adversarial_answer: str | None = None
    fact_type: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Conversation:
    """One conversation: its turns in order and its usable probes."""

    id: str
    turns: tuple[Turn, ...]
    probes: tuple[Probe, ...]
    speakers: tuple[str, ...] = ()

    def turn_index(self) -> dict[str, int]:
        """Map turn id -> position."""
        return {t.id: i for i, t in enumerate(self.turns)}


@dataclass(frozen=True, slots=True)
class Dataset:
    """Conversations loaded from one file, with the counts of what was skipped or repaired."""

    name: str
    conversations: tuple[Conversation, ...]
    probes_skipped: Mapping[str, int] = field(default_factory=dict)
    repairs: Mapping[str, int] = field(default_factory=dict)
    path: str | None = None

    @property
    def probes(self) -> int:
        return sum(len(c.probes) for c in self.conversations)
