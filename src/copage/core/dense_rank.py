"""Passages ranked by meaning: the fill's second channel, for facts asked in other words.

Beyond the paper. BM25 finds a fact only through the words it was stated in; a
question that calls it by another name ("my sibling" for "my sister Ana", "can I
have the satay sauce?" for "I'm allergic to peanuts") shares none of them. A
sentence encoder maps both to nearby vectors. :class:`DenseRanker` embeds every
closed turn once (through any :class:`TextVectors`, e.g.
:class:`copage.dense.EmbeddingCache` over all-MiniLM-L6-v2) and scores a passage of
the :class:`~copage.core.passages.PassageIndex` by its best turn's cosine with the
message (a passage is a few turns; the fact sits in one of them, and averaging it
with its neighbours would blur it). The fill gives the best ``slots`` such passages
a place before BM25's (:func:`copage.core.passages.pick`, ``first``), so the
lexical ranking keeps every other place: measured in docs/retrieval.md ("A dense
channel") and docs/dense.md.

Scores are cosines after centring: the conversation's mean turn vector is taken from
the turns and from the message, each renormalised (the first step of Mu & Viswanath
2018, "All-but-the-top": sentence vectors share a common direction, here the chat's
register itself, which a message in the same register matches everywhere; removing
it leaves what a turn is about). Parameter-free; measured in docs/dense.md
("Centring").

Beyond its places, the channel orders the rest of the fill with BM25: each passage's
BM25 score (divided by the best) plus :data:`DEFAULT_WEIGHT` x its cosine (min-max
scaled over the allowed passages), the convex combination of normalised scores
that outranks rank fusion in hybrid retrieval (Bruch, Gai & Ingber 2023, "An Analysis
of Fusion Functions for Hybrid Retrieval"). Measured in docs/retrieval.md ("Fused
order").

The turn vectors are derived state: kept per passage index, brought up to date with
it (new closed turns are embedded; if the index was rebuilt, so are they), never
stored here (an :class:`~copage.dense.EmbeddingCache` with a file keeps them across
processes).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Collection, Sequence
from typing import Protocol

import numpy as np

from copage.core.passages import PassageIndex
from copage.core.types import Turn

__all__ = ["DEFAULT_SLOTS", "DEFAULT_WEIGHT", "DenseRanker", "TextVectors", "centred",
           "check_wait", "turn_text"]

DEFAULT_SLOTS = 1
"""Fill places given to the best passages by meaning (bench/dense_channel.py's
``reserve1``: one place cost BM25 no LoCoMo evidence at any depth measured)."""
DEFAULT_WEIGHT = 0.3
"""Weight of the scaled cosine beside the scaled BM25 score in the fused order (chosen
by every fold of a leave-one-conversation-out choice among 0.2-0.5, docs/retrieval.md)."""


class TextVectors(Protocol):
    """Unit vectors for texts (rows in the order of the texts)."""

    def vectors(self, texts: Sequence[str]) -> np.ndarray: ...


def turn_text(turn: Turn) -> str:
    """The text a turn is embedded as: its text, with the caption of an image it
    shares (LoCoMo's ``blip_caption``) when it has one."""
    caption = turn.meta.get("blip_caption") if turn.meta else None
    return f"{turn.text} [shares an image: {caption}]" if caption else turn.text


def check_wait(wait: bool | float) -> bool | float:
    """``wait`` if it is a :class:`DenseRanker` ``wait`` value (True, False or a finite
    number of seconds >= 0; a number is given back as a float).

    Raises:
        ValueError: anything else.
    """
    if isinstance(wait, bool):
        return wait
    if isinstance(wait, (int, float)) and 0 <= wait < float("inf"):
        return float(wait)
    raise ValueError(f"dense wait must be True, False or a number of seconds >= 0, got {wait!r}")


class _Job:
    """One background embedding: its result or error, and whether its caller gave up."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: np.ndarray | None = None
        self.error: BaseException | None = None
        self.abandoned = False


def centred(turns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``turns`` (unit rows) less their mean, each row renormalised, and the mean (a
    zero mean for fewer than two turns: nothing to centre on)."""
    if len(turns) < 2:
        return turns, np.zeros(turns.shape[1] if turns.ndim == 2 else 0, np.float32)
    mean = turns.mean(0)
    out = turns - mean
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return out / np.maximum(norms, 1e-9), mean


class _Turns:
    """The vectors of a passage index's turns, in the index's order (and, for the
    latest matrix, its centred copy: :func:`centred`)."""

    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.parts: list[np.ndarray] = []
        self.matrix: np.ndarray | None = None
        self.centred: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # (of, rows, mean)

    def current(self, index: PassageIndex) -> np.ndarray | None:
        """The vectors when they cover exactly ``index``'s turns already, else None."""
        m, turns = self.matrix, self.turns
        n = len(index.turns)
        if m is None or len(m) != n or len(turns) != n:
            return None
        return m if not n or turns[-1] is index.turns[-1].turn else None


class DenseRanker:
    """Ranks passages by their best turn's cosine with a message (module docstring).

    Args:
        encoder: gives unit vectors for texts (``vectors(texts)``).
        slots: fill places for the best passages by meaning (>= 1).
        weight: the cosine's weight in the fused order of the rest of the fill
            (:meth:`fused`); 0 keeps BM25's order.
        wait: what :meth:`sync` (hence :meth:`top`) does when it has turns to embed
            (one embedding at a time per ranker):

            * True (the default): embed them, after waiting for any other thread's
              embedding;
            * False: embed them only when no other thread is embedding, else give None
              at once (the channel sits that turn out);
            * seconds (a number >= 0): embed them in a background thread and wait for it
              at most that long; until it has finished, and while any other embedding
              runs, give None at once (copage's default channel: a long history
              imported at once costs its first question that long at most, and the
              fill runs on BM25 alone until the vectors are there).
    """

    def __init__(self, encoder: TextVectors, slots: int = DEFAULT_SLOTS, *,
                 wait: bool | float = True, weight: float = DEFAULT_WEIGHT) -> None:
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise ValueError(f"dense slots must be an int >= 1, got {slots!r}")
        if (isinstance(weight, bool) or not isinstance(weight, int | float)
                or not 0 <= weight < float("inf")):
            raise ValueError(f"dense weight must be a number >= 0, got {weight!r}")
        self.weight = float(weight)
        if not callable(getattr(encoder, "vectors", None)):
            raise TypeError(f"encoder must have a vectors(texts) method, got {type(encoder).__name__}")
        self.encoder, self.slots, self.wait = encoder, slots, check_wait(wait)
        self._by_index: weakref.WeakKeyDictionary[PassageIndex, _Turns] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()  # the table only: one conversation's turn holds its lock
        self._embedding = threading.Lock()  # one embedding at a time (one encoder)
        self._late: BaseException | None = None  # a background embedding's error, unseen

    def sync(self, index: PassageIndex, *, wait: bool | float | None = None
             ) -> np.ndarray | None:
        """The vectors of ``index``'s turns (one row each), embedding the turns new
        since the last call (all of them if the index was rebuilt); None when there
        are turns to embed and ``wait`` (default: :attr:`wait`) gives up on them
        (see the class's ``wait``).

        Raises:
            Exception: the encoder's error, also one a background embedding met after
                its caller had stopped waiting (raised once, by the next call).
        """
        with self._lock:
            state = self._by_index.get(index)
            if state is None:
                state = self._by_index[index] = _Turns()
            late, self._late = self._late, None
        if late is not None:
            raise late
        done = state.current(index)
        if done is not None:
            return done
        how = self.wait if wait is None else check_wait(wait)
        if not isinstance(how, bool):
            return self._embed_bounded(index, state, how)
        if not self._embedding.acquire(blocking=how):
            return None
        try:
            return self._embed(index, state)
        finally:
            self._embedding.release()

    def _embed_bounded(self, index: PassageIndex, state: _Turns, seconds: float
                       ) -> np.ndarray | None:
        """Embed in a daemon thread (a process may exit while it runs: the vectors are
        derived state), waiting for it at most ``seconds``."""
        if not self._embedding.acquire(blocking=False):
            return None
        job = _Job()

        def work() -> None:
            try:
                job.result = self._embed(index, state)
            except BaseException as e:  # noqa: BLE001 - handed to whoever asks next
                job.error = e
            finally:
                with self._lock:
                    self._embedding.release()
                    job.done.set()
                    if job.error is not None and job.abandoned:
                        self._late = job.error

        threading.Thread(target=work, name="copage-dense-embed", daemon=True).start()
        if not job.done.wait(seconds):
            with self._lock:
                if not job.done.is_set():
                    job.abandoned = True
                    return None
        if job.error is not None:
            raise job.error
        return job.result

    @property
    def busy(self) -> bool:
        """Whether a thread is embedding turns with this ranker now."""
        return self._embedding.locked()

    def _embed(self, index: PassageIndex, state: _Turns) -> np.ndarray:
        turns = [t.turn for t in index.turns]
        n = len(state.turns)
        if n > len(turns) or any(turns[i] is not state.turns[i] for i in range(max(0, n - 1), n)):
            state.turns, state.parts, state.matrix, n = [], [], None, 0
        if len(turns) > n:
            new = turns[n:]
            vecs = np.asarray(self.encoder.vectors([turn_text(t) for t in new]), dtype=np.float32)
            if vecs.shape[0] != len(new):
                raise ValueError(f"encoder gave {vecs.shape[0]} vectors for {len(new)} texts")
            state.parts.append(vecs)
            state.turns.extend(new)
            state.matrix = None
        if state.matrix is None:
            dim = state.parts[0].shape[1] if state.parts else 0
            state.matrix = (np.concatenate(state.parts) if state.parts
                            else np.zeros((0, dim), np.float32))
            state.parts = [state.matrix] if len(state.matrix) else []
        return state.matrix

    def cosines(self, index: PassageIndex, message: str, allowed: Collection[int]
                ) -> np.ndarray | None:
        """Each of ``index``'s turns' cosine with ``message`` after centring (module
        docstring), ``-inf`` for a turn not on a page of ``allowed`` (page indices); None
        when no turn is embedded (or, not waiting, another thread is embedding them)."""
        turns = self.sync(index)
        if turns is None or not len(turns):
            return None
        rows, mean = self._centred(index, turns)
        query = np.asarray(self.encoder.vectors([message]), dtype=np.float32)[0] - mean
        query = query / max(float(np.linalg.norm(query)), 1e-9)
        ok = np.fromiter((t.page in allowed for t in index.turns), bool, len(index.turns))
        return np.where(ok, rows @ query, -np.inf)

    def _centred(self, index: PassageIndex, turns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:func:`centred` of ``turns``, kept with the index's vectors until they change."""
        with self._lock:
            state = self._by_index.get(index)
            kept = state.centred if state is not None else None
        if kept is not None and kept[0] is turns:
            return kept[1], kept[2]
        rows, mean = centred(turns)
        if state is not None:
            with self._lock:
                state.centred = (turns, rows, mean)
        return rows, mean

    def top(self, index: PassageIndex, message: str, allowed: Collection[int],
            k: int | None = None) -> list[int]:
        """The ``k`` (default :attr:`slots`) best passage starts of ``index`` for
        ``message`` among passages with a turn on a page of ``allowed`` (page indices),
        best first (ties: the earlier passage)."""
        k = self.slots if k is None else k
        if k <= 0:
            return []
        score = self._passage_scores(index, message, allowed)
        return [] if score is None else _best(score, k)

    def fused(self, index: PassageIndex, message: str, allowed: Collection[int],
              lexical: Sequence[tuple[int, float]]
              ) -> tuple[list[int], list[tuple[int, float]]] | None:
        """The channel's :attr:`slots` places (as :meth:`top`) and the order of the rest:
        every passage with a turn on a page of ``allowed``, by its ``lexical`` score
        (``(start, score)`` pairs, e.g. BM25's; missing: 0) divided by the best, plus
        :attr:`weight` x its cosine min-max scaled over those passages; best first
        (ties: the earlier passage), with that fused score. None when no turn is
        embedded (see :meth:`cosines`)."""
        score = self._passage_scores(index, message, allowed)
        if score is None:
            return None
        ok = np.isfinite(score)
        if not ok.any():
            return [], []
        lex = np.zeros(len(score))
        for start, value in lexical:
            lex[start] = value
        top = float(lex[ok].max())
        low, high = float(score[ok].min()), float(score[ok].max())
        meaning = (np.where(ok, score, low) - low) / max(high - low, 1e-9)
        total = np.where(ok, lex / (top if top > 0 else 1.0) + self.weight * meaning, -np.inf)
        return _best(score, self.slots), [(s, float(total[s])) for s in _best(total, len(total))]

    def _passage_scores(self, index: PassageIndex, message: str, allowed: Collection[int]
                        ) -> np.ndarray | None:
        """Each passage start's best turn cosine (``-inf``: no turn allowed); None when
        there is nothing to rank or no turn is embedded."""
        if not message.strip() or not len(index):
            return None
        cos = self.cosines(index, message, allowed)
        if cos is None:
            return None
        starts, width = len(index), index.width
        padded = np.concatenate([cos, np.full(width, -np.inf, np.float32)])
        score: np.ndarray = np.max(np.stack([padded[i:i + starts] for i in range(width)]), axis=0)
        return score


def _best(score: np.ndarray, k: int) -> list[int]:
    """The ``k`` best finite entries' positions, best first (ties: the earlier)."""
    order = np.lexsort((np.arange(len(score)), -score))
    return [int(s) for s in order[:k] if np.isfinite(score[s])]
