"""Retrieval units (sessions or pages), windows and evidence coverage."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from copage.core.boundaries import get_boundary
from copage.core.paginate import paginate
from copage.core.types import Turn, render_turns
from copage.eval.datasets.model import Probe


@dataclass(frozen=True, slots=True)
class Unit:
    """A session or page: a turn range ``[start, end)`` of the conversation."""

    index: int
    start: int
    end: int

    @property
    def id(self) -> str:
        """``u3`` style id (1-based)."""
        return f"u{self.index + 1}"


@dataclass(frozen=True, slots=True)
class Coverage:
    """Evidence coverage of one prompt: all evidence turns visible, any visible."""

    all: bool
    any: bool


def split_units(turns: Sequence[Turn], boundary: str) -> list[Unit]:
    """Cut turns into units: by ``Turn.session`` for ``session``, else by the boundary."""
    if boundary == "session" and turns and all(t.session is not None for t in turns):
        units: list[Unit] = []
        start = 0
        for i in range(1, len(turns) + 1):
            if i == len(turns) or turns[i].session != turns[start].session:
                units.append(Unit(len(units), start, i))
                start = i
        return units
    spans = paginate(turns, get_boundary(boundary))
    return [Unit(i, s.start, s.end) for i, s in enumerate(spans)]


def window_start(n_turns: int, window: int) -> int:
    """First turn index of the last ``window`` turns."""
    return max(0, n_turns - window)


def evicted_units(units: Sequence[Unit], start: int) -> list[Unit]:
    """Units with at least one turn before the window start (their early part is outside)."""
    return [u for u in units if u.start < start]


def unit_text(turns: Sequence[Turn], unit: Unit, start: int) -> str:
    """The rendered text of the unit's turns that lie before the window start."""
    return render_turns(list(turns[unit.start : min(unit.end, start)]))


def unit_turn_ids(turns: Sequence[Turn], unit: Unit, start: int) -> list[str]:
    """Ids of the unit's turns before the window start."""
    return [t.id for t in turns[unit.start : min(unit.end, start)]]


def coverage(probe: Probe, visible: Collection[str]) -> Coverage:
    """Whether all (and whether any) of the probe's evidence turns are visible."""
    ev = [e for e in probe.evidence]
    hits = [e in visible for e in ev]
    return Coverage(bool(ev) and all(hits), any(hits))


def needed_units(probe: Probe, units: Sequence[Unit], index: dict[str, int]) -> tuple[int, ...]:
    """Indices of the units holding the probe's evidence."""
    out: set[int] = set()
    for e in probe.evidence:
        pos = index.get(e)
        if pos is None:
            continue
        for u in units:
            if u.start <= pos < u.end:
                out.add(u.index)
                break
    return tuple(sorted(out))
