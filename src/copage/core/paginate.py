"""Cutting turns into pages: the boundary strategy plus the tool-call rule.

The pager and the simulation both cut through :class:`Paginator`, so a page is
the same page everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from copage.core.boundaries import BoundaryStrategy
from copage.core.types import Turn


@dataclass(frozen=True, slots=True)
class Span:
    """A closed page as a turn range ``[start, end)`` and when it closed.

    ``closed_after`` is the index of the last turn that had been added when the
    page closed (``>= end - 1``; larger for strategies that need lookahead), or
    ``-1`` if it was closed by :meth:`Paginator.close`.
    """

    start: int
    end: int
    closed_after: int


def _safe(turns: Sequence[Turn], cut: int) -> bool:
    """A cut before position ``cut`` never separates a tool call from its results."""
    if cut <= 0 or cut >= len(turns):
        return True
    prev, nxt = turns[cut - 1], turns[cut]
    return not (prev.role == "assistant" and prev.tool_calls) and nxt.role != "tool"


class Paginator:
    """Feeds turns to a boundary strategy and keeps the open buffer.

    Only the open buffer is given to the strategy, so the cost of one step is
    bounded by the buffer length, not by the conversation length.
    """

    def __init__(self, strategy: BoundaryStrategy, start: int = 0) -> None:
        self.strategy = strategy
        self.start = start  # index of the first turn of the open page

    def step(self, turns: Sequence[Turn], upto: int | None = None, *, final: bool = False) -> list[Span]:
        """Return the pages closed now, given the turns added so far (``turns[:upto]``)."""
        n = len(turns) if upto is None else upto
        buffer = turns[self.start : n]
        if not buffer:
            return []
        spans: list[Span] = []
        begin = 0
        for c in cuts_with_context(self.strategy, turns, self.start, n, final=final):
            if c <= begin:
                continue  # an earlier cut moved past a tool exchange already covers it
            end = c
            # Move the cut forward until it does not split a tool exchange.
            while end < len(buffer) and not _safe(buffer, end):
                end += 1
            if end >= len(buffer):
                if not final and not _safe_tail(buffer):
                    break  # the tool exchange is still open: wait for its results
                end = len(buffer)
            spans.append(Span(self.start + begin, self.start + end, n - 1 if not final else -1))
            begin = end
            if end == len(buffer):
                break
        if final and begin < len(buffer):
            spans.append(Span(self.start + begin, self.start + len(buffer), -1))
            begin = len(buffer)
        self.start += begin
        return spans


def cuts_with_context(
    strategy: BoundaryStrategy, turns: Sequence[Turn], start: int, end: int, *, final: bool
) -> list[int]:
    """``strategy.cuts`` on the buffer ``turns[start:end]``, given the ``lookbehind`` turns
    before it (``before=``) when the strategy asks for them."""
    buffer = turns[start:end]
    lookbehind = int(getattr(strategy, "lookbehind", 0) or 0)
    if lookbehind > 0 and start > 0:
        before = turns[max(0, start - lookbehind) : start]
        return list(strategy.cuts(buffer, final=final, before=before))  # type: ignore[call-arg]
    return list(strategy.cuts(buffer, final=final))


def _safe_tail(buffer: Sequence[Turn]) -> bool:
    """The buffer may be closed at its end: it does not end inside a tool exchange."""
    answered: set[str] = set()
    for t in reversed(buffer):
        if t.role == "tool":
            answered.add(t.tool_call_id or "")
        elif t.role == "assistant" and t.tool_calls:
            return all(c.id in answered for c in t.tool_calls)
        else:
            return True
    return True


def paginate(turns: Sequence[Turn], strategy: BoundaryStrategy) -> list[Span]:
    """Cut a whole conversation as the pager would, turn by turn, then close the rest."""
    pag = Paginator(strategy)
    spans: list[Span] = []
    for i in range(len(turns)):
        spans.extend(pag.step(turns, i + 1))
    spans.extend(pag.step(turns, final=True))
    return spans


class ReplayPaginator(Paginator):
    """Replays cuts computed earlier by :func:`paginate` (same pages, same closing
    times) without running the strategy again: the simulation runs many cells over
    one conversation and cuts it once."""

    def __init__(self, strategy: BoundaryStrategy, spans: Sequence[Span]) -> None:
        super().__init__(strategy)
        self._spans = list(spans)
        self._next = 0

    def step(self, turns: Sequence[Turn], upto: int | None = None, *, final: bool = False) -> list[Span]:
        n = len(turns) if upto is None else upto
        out: list[Span] = []
        while self._next < len(self._spans):
            s = self._spans[self._next]
            due = final if s.closed_after == -1 else s.closed_after <= n - 1
            if not due or s.end > n:
                break
            out.append(s)
            self._next += 1
            self.start = s.end
        return out
