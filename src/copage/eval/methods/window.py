"""The window baselines: full context (last 60 turns), truncation (last 20), and
retrieval (BM25 or word overlap: top-k evicted units added to the last 20 turns).

Paper section 4: "Full context: all turns included (truncated to 60 turns)",
"Truncation: last 20 turns only", "BM25 retrieval: evicted sessions retrieved by
BM25 scoring against the query (top-3)", "Word-overlap retrieval ... (top-3)".
BM25 is Okapi BM25 (Robertson & Zaragoza 2009) from :mod:`copage.core.retrieval`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from copage.core import prompt
from copage.core.retrieval import BM25Index, word_overlap_scores
from copage.core.text import content_words
from copage.core.tokens import default_tokenizer
from copage.core.types import Turn
from copage.eval.datasets.model import Conversation, Probe
from copage.eval.methods.base import (
    INSTRUCTION,
    MethodAnswer,
    MethodPrompt,
    MethodSettings,
    message_tokens,
    question_message,
)
from copage.eval.methods.calls import Recorder
from copage.eval.methods.units import (
    Unit,
    evicted_units,
    needed_units,
    split_units,
    unit_text,
    unit_turn_ids,
    window_start,
)
from copage.llm.types import ChatModel, ChatRequest

Scorer = Callable[[Sequence[str]], list[float]]
ScorerFactory = Callable[[Sequence[Sequence[str]]], Scorer]


def bm25_scorer(docs: Sequence[Sequence[str]]) -> Scorer:
    """Okapi BM25 over ``docs`` (index built once)."""
    return BM25Index(docs).scores


def overlap_scorer(docs: Sequence[Sequence[str]]) -> Scorer:
    """Word overlap (:func:`copage.core.retrieval.word_overlap_scores`) over ``docs``."""
    return lambda query: word_overlap_scores(query, docs)


SCORERS: dict[str, ScorerFactory] = {"bm25": bm25_scorer, "word_overlap": overlap_scorer}


def rank_units(question: str, scorer: Scorer, n: int, k: int) -> list[int]:
    """Positions of the top ``k`` of ``n`` docs with a positive score (ties: earlier first)."""
    if n == 0:
        return []
    scores = scorer(content_words(question))
    order = sorted(range(n), key=lambda i: (-scores[i], i))
    return [i for i in order[:k] if scores[i] > 0]


class WindowConversation:
    """A conversation prepared for a window method (with or without retrieval)."""

    def __init__(self, conversation: Conversation, settings: MethodSettings, window: int,
                 scorer: ScorerFactory | None) -> None:
        self.conversation, self.settings = conversation, settings
        self.turns: tuple[Turn, ...] = conversation.turns
        self.start = window_start(len(self.turns), window)
        self.units = split_units(self.turns, settings.boundary)
        self.candidates: list[Unit] = evicted_units(self.units, self.start) if scorer else []
        self.texts = [unit_text(self.turns, u, self.start) for u in self.candidates]
        self.scorer: Scorer | None = (
            scorer([content_words(t) for t in self.texts]) if scorer and self.texts else None
        )
        self.index = conversation.turn_index()
        self.tokenizer = default_tokenizer()

    def retrieve(self, question: str) -> list[Unit]:
        """The retrieved units for ``question``, in conversation order."""
        if self.scorer is None:
            return []
        picked = rank_units(question, self.scorer, len(self.texts), self.settings.top_k)
        return sorted((self.candidates[i] for i in picked), key=lambda u: u.index)

    def _messages(self, probe: Probe, retrieved: Sequence[Unit]) -> list[dict[str, Any]]:
        system = INSTRUCTION
        if retrieved:
            blocks = "\n\n".join(unit_text(self.turns, u, self.start) for u in retrieved)
            system += "\n\nEarlier parts of the conversation (retrieved):\n" + blocks
        msgs: list[dict[str, Any]] = [{"role": "system", "content": system}]
        msgs.extend(prompt.turn_message(t) for t in self.turns[self.start :])
        msgs.append(question_message(probe))
        return msgs

    def _visible(self, retrieved: Sequence[Unit]) -> frozenset[str]:
        ids = {t.id for t in self.turns[self.start :]}
        for u in retrieved:
            ids.update(unit_turn_ids(self.turns, u, self.start))
        return frozenset(ids)

    def _needed(self, probe: Probe, visible: frozenset[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        needed = needed_units(probe, self.units, self.index)
        ids = tuple(self.units[i].id for i in needed)
        missing = tuple(self.units[i].id for i in needed
                        if any(e not in visible for e in probe.evidence
                               if self.units[i].start <= self.index.get(e, -1) < self.units[i].end))
        return ids, missing

    def build(self, probe: Probe) -> MethodPrompt:
        """The prompt: instruction (+ retrieved units), the window, the question."""
        retrieved = self.retrieve(probe.question)
        msgs = self._messages(probe, retrieved)
        window_ids = frozenset(t.id for t in self.turns[self.start :])
        needed, evicted = self._needed(probe, window_ids)
        return MethodPrompt(msgs, [], self._visible(retrieved),
                            message_tokens(msgs, [], self.tokenizer), needed, evicted)

    async def answer(self, probe: Probe, model: ChatModel) -> MethodAnswer:
        """One call, no tools."""
        built = self.build(probe)
        rec = Recorder(model, self.tokenizer)
        response = await rec.complete(ChatRequest(
            messages=tuple(built.messages), temperature=self.settings.temperature,
            max_tokens=self.settings.max_tokens,
        ))
        return MethodAnswer(response.text, tuple(rec.calls), built.needed, built.evicted_needed)


@dataclass(frozen=True, slots=True)
class WindowMethod:
    """``full_context``, ``truncation``, ``bm25`` or ``word_overlap``."""

    name: str
    description: str
    retrieval: str | None = None
    full: bool = False
    uses_bookmarks: bool = False

    def prepare(self, conversation: Conversation, settings: MethodSettings) -> WindowConversation:
        """Cut windows and retrieval units for ``conversation``."""
        window = settings.full_window if self.full else settings.window
        scorer = SCORERS[self.retrieval] if self.retrieval else None
        return WindowConversation(conversation, settings, window, scorer)
