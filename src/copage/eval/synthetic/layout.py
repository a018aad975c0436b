"""Where each planted fact, revisit and distractor goes (exchange positions)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass

_TRIES = 200


@dataclass(frozen=True)
class Plan:
    """Exchange positions per fact: statement, later revisits, distractors (0 = greeting)."""

    statements: tuple[int, ...]
    revisits: tuple[tuple[int, ...], ...]
    distractors: tuple[tuple[int, ...], ...]


def spaced_sample(rng: random.Random, pool: Sequence[int], k: int, gap: int) -> list[int]:
    """``k`` sorted positions from ``pool``, pairwise at least ``gap`` apart if possible."""
    if k > len(pool):
        raise ValueError(f"cannot place {k} exchanges in {len(pool)} free positions")
    pick: list[int] = []
    for _ in range(_TRIES):
        pick = sorted(rng.sample(list(pool), k))
        if all(b - a >= gap for a, b in itertools.pairwise(pick)):
            return pick
    return pick


def plan_positions(
    rng: random.Random,
    n_exchanges: int,
    n_facts: int,
    *,
    distractors: int,
    revisit_counts: Sequence[int],
    early_end: int | None,
) -> Plan:
    """Lay out one conversation.

    Statements go in ``1..early_end`` (or the first 90% of the conversation; under
    revisit topology the first 60%, to leave room for the topics to come back).
    Revisits of a fact come at least three exchanges after its statement; a fact's
    distractors stay at least two exchanges away from its own fact turns, so they
    tend to land on other pages.
    """
    revisiting = any(revisit_counts)
    last = n_exchanges - 1
    if early_end is not None:
        end = early_end
    else:
        end = round(n_exchanges * (0.6 if revisiting else 0.9))
    end = min(last, max(end, 2 * n_facts))
    statements = spaced_sample(rng, range(1, end + 1), n_facts, 2)
    rng.shuffle(statements)
    used = set(statements)
    revisits: list[tuple[int, ...]] = []
    for stmt, k in zip(statements, revisit_counts, strict=True):
        later = [p for p in range(stmt + 3, n_exchanges) if p not in used]
        k = min(k, len(later))
        chosen = spaced_sample(rng, later, k, 3) if k else []
        used.update(chosen)
        revisits.append(tuple(chosen))
    placed: list[tuple[int, ...]] = []
    for stmt, own in zip(statements, revisits, strict=True):
        mine = (stmt, *own)
        free = [p for p in range(1, n_exchanges) if p not in used]
        far = [p for p in free if all(abs(p - q) >= 2 for q in mine)]
        pool = far if len(far) >= distractors else free
        chosen = spaced_sample(rng, pool, distractors, 2) if distractors else []
        used.update(chosen)
        placed.append(tuple(chosen))
    return Plan(tuple(statements), tuple(revisits), tuple(placed))
