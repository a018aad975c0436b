"""The window baselines, each filling one token budget by its own rule.

Paper section 4: "Full context: all turns included (truncated to 60 turns)",
"Truncation: last 20 turns only", "BM25 retrieval: evicted sessions retrieved by
BM25 scoring against the query (top-3)", "Word-overlap retrieval ... (top-3)".
Here every method gets the same prompt budget (``MethodSettings.budget``):

* ``full_context``: the most recent turns that fit (optionally at most ``full_window``);
* ``truncation``: the last ``window`` turns (fewer if they do not fit);
* ``bm25`` / ``word_overlap``: the last ``window`` turns, at most half the budget,
  then the evicted units that match the question (score > 0), best first, each
  whole unit that still fits (optionally at most ``top_k``);
* ``bm25@fixed_10`` and the like (:mod:`.pages`): the same retrieval over pages of
  the named boundary, behind copage's default resident window at the budget.

BM25 is Okapi BM25 (Robertson & Zaragoza 2009) from :mod:`copage.core.retrieval`,
read as copage reads it: documents by :func:`~copage.core.text.index_terms`, the
question by :func:`~copage.core.text.query_terms` (the speculative fill's reader),
so a change of the library's reader changes the baselines and copage alike.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from copage.core import prompt
from copage.core.retrieval import BM25Index, word_overlap_scores
from copage.core.text import index_terms, query_terms
from copage.core.tokens import default_tokenizer
from copage.core.types import Turn
from copage.eval.datasets.probes import Conversation, Probe
from copage.eval.methods.method import (
    INSTRUCTION,
    MethodAnswer,
    MethodPrompt,
    MethodSettings,
    call_parts,
    does_not_fit,
    question_message,
)
from copage.eval.methods.recorder import Recorder
from copage.eval.methods.units import (
    Unit,
    evicted_units,
    needed_units,
    split_units,
    unit_text,
    unit_turn_ids,
)
from copage.llm.model_types import ChatModel, ChatRequest

Scorer = Callable[[Sequence[str]], list[float]]
ScorerFactory = Callable[[Sequence[Sequence[str]]], Scorer]

RETRIEVED_HEADER = "Earlier parts of the conversation (retrieved):"
RECENT_SHARE = 0.5
"""Retrieval methods keep their recent window within this share of the budget."""

WHOLE = "whole conversation fits"


def bm25_scorer(docs: Sequence[Sequence[str]]) -> Scorer:
    """Okapi BM25 over ``docs`` (index built once)."""
    return BM25Index(docs).scores


def overlap_scorer(docs: Sequence[Sequence[str]]) -> Scorer:
    """Word overlap (:func:`copage.core.retrieval.word_overlap_scores`) over ``docs``."""
    return lambda query: word_overlap_scores(query, docs)


SCORERS: dict[str, ScorerFactory] = {"bm25": bm25_scorer, "word_overlap": overlap_scorer}


def rank_units(question: str, scorer: Scorer, n: int) -> list[int]:
    """Positions of the ``n`` docs that match ``question`` (score > 0), best first (ties: earlier)."""
    if n == 0:
        return []
    scores = scorer(query_terms(question))
    return [i for i in sorted(range(n), key=lambda i: (-scores[i], i)) if scores[i] > 0]


class Turns:
    """A conversation's turns as chat messages, with exact token counts of any recent window."""

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = tuple(turns)
        self.tokenizer = default_tokenizer()
        counts = [self.tokenizer.count(m.get("content") or "")
                  for m in prompt.turn_messages(list(self.turns))]
        self.suffix = [0] * (len(counts) + 1)
        for i in range(len(counts) - 1, -1, -1):
            self.suffix[i] = self.suffix[i + 1] + counts[i]
        self._first: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.turns)

    def tokens(self, start: int) -> int:
        """Tokens of the messages of ``turns[start:]`` (the first one carries its session head)."""
        if start >= len(self.turns):
            return 0
        if start not in self._first:
            first = prompt.turn_messages([self.turns[start]])[0]
            self._first[start] = self.tokenizer.count(first.get("content") or "")
        return self._first[start] + self.suffix[start + 1]

    def fit(self, limit: int, earliest: int = 0) -> int:
        """The earliest start >= ``earliest`` whose window takes at most ``limit`` tokens."""
        lo, hi = earliest, len(self.turns)
        while lo < hi:  # window tokens fall as start grows
            mid = (lo + hi) // 2
            if self.tokens(mid) <= limit:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def messages(self, start: int) -> list[dict[str, Any]]:
        """The chat messages of ``turns[start:]``."""
        return prompt.turn_messages(list(self.turns[start:]))


class WindowConversation:
    """A conversation prepared for a window method (with or without retrieval).

    ``recent``: ``"full"`` (the budget and ``full_window`` bound the window) or
    ``"window"`` (the last ``window`` turns; with retrieval also half the budget).
    """

    def __init__(self, conversation: Conversation, settings: MethodSettings,
                 scorer: ScorerFactory | None, *, recent: str = "window",
                 system: str = INSTRUCTION, share: float = RECENT_SHARE,
                 start: int | None = None, window_label: str | None = None) -> None:
        self.conversation, self.settings = conversation, settings
        self.turns: tuple[Turn, ...] = conversation.turns
        self.view = Turns(self.turns)
        self.tokenizer = self.view.tokenizer
        self.system = system
        self.system_tokens = self.tokenizer.count(system)
        self.recent = recent
        self.units = split_units(self.turns, settings.boundary)
        self.index = conversation.turn_index()
        n = len(self.turns)
        self.scorer_factory = scorer
        if recent == "full":
            cap = settings.full_window
            self.earliest = max(0, n - cap) if cap is not None else 0
            self.start = self.earliest  # per probe: see _start
        elif start is not None:  # a window given by another method's plan (:mod:`.pages`)
            self.earliest = self.start = max(0, min(n, start))
        else:
            self.earliest = max(0, n - settings.window)
            limit = settings.budget * share if scorer else settings.budget
            self.start = self.view.fit(int(limit) - self.system_tokens, self.earliest)
        self.window_label = window_label or (
            "the most recent turns that fit" if recent == "full"
            else f"the last {settings.window} turns")
        self.candidates: list[Unit] = evicted_units(self.units, self.start) if scorer else []
        self.texts = [unit_text(self.turns, u, self.start) for u in self.candidates]
        self.text_tokens = [self.tokenizer.count(t) for t in self.texts]
        self._costs: dict[tuple[int, int | None], int] = {}
        self.scorer: Scorer | None = (
            scorer([index_terms(t) for t in self.texts]) if scorer and self.texts else None
        )

    # ------------------------------------------------------------------ pieces
    def _start(self, probe: Probe) -> int:
        """The window start for ``probe``: its question counts against the budget too."""
        if self.recent != "full":
            return self.start
        room = self.settings.budget - self.system_tokens - self.tokenizer.count(probe.question)
        return self.view.fit(room, self.earliest)

    def pack(self, query: str, room: int) -> tuple[list[Unit], str | None]:
        """Units matching ``query`` (best first) whose text fits in ``room`` tokens.

        Returns the units in conversation order and why fewer were taken than
        matched (None when only the room stopped it).
        """
        if self.scorer is None:
            return [], (WHOLE if not self.candidates and self.start == 0 else "nothing to retrieve")
        ranked = rank_units(query, self.scorer, len(self.texts))
        picked: list[int] = []
        cap = self.settings.top_k
        limit: str | None = None
        for i in ranked:
            if cap is not None and len(picked) >= cap:
                limit = f"top_k={cap} cap"
                break
            if self._cost(sorted([*picked, i])) <= room:
                picked.append(i)
        if limit is None and len(picked) == len(ranked):
            limit = WHOLE if len(picked) == len(self.candidates) else "no more units match"
        return sorted((self.candidates[i] for i in picked), key=lambda u: u.index), limit

    def _cost(self, picked: Sequence[int]) -> int:
        """Tokens of the candidates ``picked`` (indices, in conversation order) as
        :meth:`blocks` shows them: each unit's text after the one before it (a session
        header is not repeated), and the blank line joining blocks."""
        total = 0
        for k, i in enumerate(picked):
            prev = picked[k - 1] if k else None
            if (i, prev) not in self._costs:
                text = self.texts[i] if prev is None else unit_text(
                    self.turns, self.candidates[i], self.start, self.candidates[prev])
                self._costs[i, prev] = (self.text_tokens[i] if prev is None
                                        else self.tokenizer.count(text)) + 2
            total += self._costs[i, prev]
        return total

    def blocks(self, units: Sequence[Unit]) -> str:
        """The retrieved units' text, in conversation order (a session header shown
        just before is not repeated)."""
        return "\n\n".join(unit_text(self.turns, u, self.start, units[k - 1] if k else None)
                             for k, u in enumerate(units))

    def _messages(self, probe: Probe, retrieved: Sequence[Unit], start: int) -> list[dict[str, Any]]:
        system = self.system
        if retrieved:
            system += f"\n\n{RETRIEVED_HEADER}\n" + self.blocks(retrieved)
        return [{"role": "system", "content": system}, *self.view.messages(start),
                question_message(probe)]

    def _visible(self, retrieved: Sequence[Unit], start: int) -> frozenset[str]:
        ids = {t.id for t in self.turns[start:]}
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

    def _count(self, messages: Sequence[dict[str, Any]]) -> int:
        from copage.eval.methods.method import message_tokens

        return message_tokens(messages, [], self.tokenizer)

    # ------------------------------------------------------------------ the method
    def build(self, probe: Probe) -> MethodPrompt:
        """The prompt: instruction (+ retrieved units), the window, the question."""
        start = self._start(probe)
        budget = self.settings.budget
        retrieved: list[Unit] = []
        limit: str | None = None
        if self.scorer_factory is not None:
            fixed = (self.system_tokens + self.view.tokens(start) + self.tokenizer.count(probe.question)
                     + self.tokenizer.count(f"\n\n{RETRIEVED_HEADER}\n"))
            retrieved, limit = self.pack(probe.question, budget - fixed)
            msgs = self._messages(probe, retrieved, start)
            tokens = self._count(msgs)
            while retrieved and tokens > budget:  # joins may tokenise a little differently
                retrieved.pop()
                msgs = self._messages(probe, retrieved, start)
                tokens = self._count(msgs)
        else:
            msgs = self._messages(probe, retrieved, start)
            tokens = self._count(msgs)
            if start == 0:
                limit = WHOLE
            elif start == self.earliest:
                limit = (f"full_window={self.settings.full_window} cap" if self.recent == "full"
                         else f"window of {self.settings.window} turns")
        window_ids = frozenset(t.id for t in self.turns[start:])
        needed, evicted = self._needed(probe, window_ids)
        if tokens > budget:  # the question (or the instruction) alone does not fit: not sent
            return does_not_fit(needed, needed, would_need=tokens)
        routed = ",".join(u.id for u in retrieved) or None
        parts = self.parts(tokens, probe, start, msgs[0]["content"])
        return MethodPrompt(msgs, [], self._visible(retrieved, start), tokens, needed, evicted,
                            routed=routed, limit=limit, calls=(tokens,), parts=parts)

    def parts(self, total: int, probe: Probe, start: int, system: str) -> dict[str, int]:
        """The billed parts of one call: instruction, window, retrieved text, question."""
        count = self.tokenizer.count
        system_all = count(system)
        return call_parts(total, {
            "preamble": min(self.system_tokens, system_all),
            "paged_in": max(0, system_all - self.system_tokens),
            "recent_turns": self.view.tokens(start), "question": count(probe.question)})

    async def answer(self, probe: Probe, model: ChatModel) -> MethodAnswer:
        """One call, no tools."""
        built = self.build(probe)
        if built.limit is not None and built.limit.startswith("does not fit"):
            return MethodAnswer("", (), built.needed, built.evicted_needed,
                                extra={"does_not_fit": True})
        rec = Recorder(model, self.tokenizer, self.settings.budget,
                       parts_of=lambda _request: built.parts)  # the one call is the built prompt
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
        scorer = SCORERS[self.retrieval] if self.retrieval else None
        return WindowConversation(conversation, settings, scorer,
                                  recent="full" if self.full else "window")
