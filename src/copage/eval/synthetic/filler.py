"""Filler conversation between the planted facts, in topic blocks.

Forward topology: families come in a shuffled order and a family, once left, never
returns. Revisit topology: families are cut into shorter blocks and earlier ones
are resumed later ("Back to cooking for a second."), as people do in LoCoMo.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import NamedTuple

from copage.eval.synthetic.filler_a import FAMILIES_A
from copage.eval.synthetic.filler_b import CLOSINGS, FAMILIES_B, GREETINGS, SMALL_TALK
from copage.eval.synthetic.values import Exchange

FAMILIES: dict[str, tuple[Exchange, ...]] = {**FAMILIES_A, **FAMILIES_B}
_SMALL_TALK_P = 0.05


class Labelled(NamedTuple):
    """A filler exchange and its topic block label (``travel#3``, ``small-talk#0``)."""

    exchange: Exchange
    topic: str


class _Family:
    def __init__(self, label: str, exchanges: tuple[Exchange, ...]) -> None:
        self.label, self.exchanges, self.cursor = label, exchanges, 0

    def left(self) -> int:
        return len(self.exchanges) - self.cursor


def labelled_filler(rng: random.Random, n: int, *, revisit: bool) -> list[Labelled]:
    """``n`` filler exchanges in topic blocks (see the module docstring), each with its
    block label.

    Every block gets its own label (``<family>#<block number>``, or ``small-talk#<k>``
    for each small-talk exchange), so a resumed family is a new block.
    """
    order = list(FAMILIES)
    rng.shuffle(order)
    fresh = [_Family(label, FAMILIES[label]) for label in order]
    parked: list[_Family] = []
    talk = list(SMALL_TALK)
    rng.shuffle(talk)
    out: list[Labelled] = []
    current: _Family | None = None
    block_left = blocks = 0
    topic = ""
    while len(out) < n:
        if talk and rng.random() < _SMALL_TALK_P and out:
            out.append(Labelled(talk.pop(), f"small-talk#{len(SMALL_TALK) - len(talk) - 1}"))
            continue
        if current is None or block_left == 0 or current.left() == 0:
            resumable = [f for f in parked if f.left() > 0]
            if current is not None and current.left() > 0 and revisit:
                parked.append(current)
            resume = bool(revisit and resumable and (rng.random() < 0.5 or not fresh))
            if resume:
                current = resumable[rng.randrange(len(resumable))]
                parked.remove(current)
            elif fresh:
                current = fresh.pop()
            else:  # every family used up: start the tour again (long conversations only)
                fresh = [_Family(label, FAMILIES[label]) for label in order]
                current = fresh.pop()
            block_left = rng.randint(2, 4) if revisit else rng.randint(4, 6)
            topic, blocks = f"{current.label}#{blocks}", blocks + 1
            ex = current.exchanges[current.cursor]
            if resume:
                ex = Exchange(f"Back to {current.label} for a second. {ex.user}", ex.assistant)
        else:
            ex = current.exchanges[current.cursor]
        current.cursor += 1
        block_left -= 1
        out.append(Labelled(ex, topic))
    return out


def all_filler_text() -> Sequence[str]:
    """Every filler text (for checks that filler never restates or contradicts a fact)."""
    texts: list[str] = []
    for family in FAMILIES.values():
        for ex in family:
            texts += [ex.user, ex.assistant]
    for ex in (*SMALL_TALK, *GREETINGS):
        texts += [ex.user, ex.assistant]
    return [*texts, *CLOSINGS]
