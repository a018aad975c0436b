"""Boundary strategies: how a stream of turns is cut into pages.

Every strategy answers ``cuts(buffer, final=...)`` on the open buffer (turns since
the last closed page): the exclusive end positions of the pages now decided. Names:
``fixed_N``, ``tokens_N``, ``session``, ``topic_shift``, ``segment``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from copage.core.registry import Registry, UnknownNameError
from copage.core.types import Turn

from ._common import BoundaryParameterError, check_cuts
from .fixed import FixedTurns, TokenBudget, make_fixed, make_tokens
from .segment import Segment, make_segment
from .segmentation_errors import default_k, pk, window_diff
from .session import SessionBoundary, make_session
from .topic_shift import TopicShift, make_topic_shift

__all__ = [
    "BOUNDARIES",
    "BoundaryParameterError",
    "BoundaryStrategy",
    "FixedTurns",
    "Segment",
    "SessionBoundary",
    "TokenBudget",
    "TopicShift",
    "UnknownNameError",
    "default_k",
    "get_boundary",
    "pk",
    "split",
    "split_online",
    "window_diff",
]


class BoundaryStrategy(Protocol):
    """Decides where pages end.

    A strategy that needs the end of the previous page (``topic_shift``) has an
    attribute ``lookbehind`` (turns) and a keyword ``before=`` on ``cuts``: the
    pager then passes that many turns preceding the buffer (context only, never
    cut). Strategies without it are called with the buffer alone.
    """

    name: str

    def cuts(self, turns: Sequence[Turn], *, final: bool) -> list[int]: ...


BOUNDARIES: Registry[BoundaryStrategy] = Registry("boundary")
BOUNDARIES.register_pattern("fixed_N", r"fixed_(\d+)", make_fixed)
BOUNDARIES.register_pattern("tokens_N", r"tokens_(\d+)", make_tokens)
BOUNDARIES.register("session", make_session)
BOUNDARIES.register("topic_shift", make_topic_shift)
BOUNDARIES.register("segment", make_segment)

_SIZED = re.compile(r"(fixed|tokens)_(.*)\Z")


def get_boundary(name: str, **options: object) -> BoundaryStrategy:
    """Build the strategy ``name`` (e.g. ``"fixed_20"``); unknown names list the valid ones."""
    if not isinstance(name, str):
        raise TypeError(f"boundary name must be a string, got {name!r}")
    m = _SIZED.match(name)
    if m and name not in BOUNDARIES:
        raise BoundaryParameterError(
            f"boundary {name!r}: N must be a whole number >= 1, e.g. {m.group(1)}_20"
        )
    return BOUNDARIES.create(name, **options)


def _pages(turns: Sequence[Turn], cuts: list[int]) -> list[list[Turn]]:
    starts = [0, *cuts[:-1]]
    return [list(turns[a:b]) for a, b in zip(starts, cuts, strict=True)]


def split(turns: Sequence[Turn], strategy: BoundaryStrategy) -> list[list[Turn]]:
    """Offline: cut a whole conversation at once (one ``cuts(turns, final=True)`` call)."""
    if not turns:
        return []
    cuts = strategy.cuts(turns, final=True)
    check_cuts(cuts, len(turns), final=True, name=strategy.name)
    return _pages(turns, cuts)


def split_online(turns: Sequence[Turn], strategy: BoundaryStrategy) -> list[list[Turn]]:
    """Online: feed turns one by one as the pager does, then close the rest with ``final``.

    Like the pager, a strategy with a ``lookbehind`` gets that many turns before the
    buffer as ``before=``.
    """
    pages: list[list[Turn]] = []
    start = 0
    lookbehind = int(getattr(strategy, "lookbehind", 0) or 0)

    def cuts_at(end: int, final: bool) -> list[int]:
        buffer = turns[start:end]
        if lookbehind > 0 and start > 0:
            before = turns[max(0, start - lookbehind) : start]
            cuts = strategy.cuts(buffer, final=final, before=before)  # type: ignore[call-arg]
        else:
            cuts = strategy.cuts(buffer, final=final)
        check_cuts(cuts, len(buffer), final=final, name=strategy.name)
        return cuts

    for end in range(1, len(turns) + 1):
        cuts = cuts_at(end, False)
        if cuts:
            pages.extend(_pages(turns[start:end], cuts))
            start += cuts[-1]
    if start < len(turns):
        pages.extend(_pages(turns[start:], cuts_at(len(turns), True)))
    return pages
