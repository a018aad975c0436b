"""Retrieval units (sessions or pages), windows and evidence coverage.

**Evidence groups.** A probe's evidence is a list of groups of turn ids; a group
is visible when any of its turns is. On LoCoMo every evidence turn is a group of
its own (a multi-hop answer needs them all). On synthetic data a planted fact is
stated (and maybe restated) in the evidence turns, and each statement is answered
by the assistant acknowledging it ("Noted: peanuts are off the table"): any one of
these turns carries the fact, so they form one group.

**Coverage.** ``all``: every group visible; ``any``: at least one group visible.
``all`` is the headline: it is the condition under which the answer can be read
off the prompt (for multi-hop LoCoMo questions, one evidence turn of two is not
enough); ``any`` is printed beside it as the lenient bound. On synthetic data the
two coincide (one group per probe).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from copage.core.boundaries import get_boundary
from copage.core.paginate import paginate
from copage.core.types import Turn, render_turns
from copage.eval.datasets.probes import Conversation, Probe

EvidenceGroups = tuple[frozenset[str], ...]


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


def evicted_units(units: Sequence[Unit], start: int) -> list[Unit]:
    """Units with at least one turn before the window start (their early part is outside)."""
    return [u for u in units if u.start < start]


def unit_text(turns: Sequence[Turn], unit: Unit, start: int, after: Unit | None = None) -> str:
    """The rendered text of the unit's turns that lie before the window start; ``after``:
    the unit shown just before it (its last session header is not repeated, as in
    copage's fill: :func:`copage.core.prompt.run_piece`)."""
    last = turns[min(after.end, start) - 1] if after is not None else None
    return render_turns(list(turns[unit.start : min(unit.end, start)]), last)


def unit_turn_ids(turns: Sequence[Turn], unit: Unit, start: int) -> list[str]:
    """Ids of the unit's turns before the window start."""
    return [t.id for t in turns[unit.start : min(unit.end, start)]]


def evidence_groups(conversation: Conversation, probe: Probe, *,
                    acknowledgements: bool = False) -> EvidenceGroups:
    """The probe's evidence groups (module docstring).

    ``acknowledgements`` (synthetic data): one group of the evidence turns and, for
    each, the assistant turn right after it in the same session.
    """
    if not acknowledgements:
        return tuple(frozenset({e}) for e in probe.evidence)
    index = conversation.turn_index()
    turns = conversation.turns
    group: set[str] = set()
    for e in probe.evidence:
        group.add(e)
        i = index.get(e)
        if i is not None and i + 1 < len(turns):
            nxt = turns[i + 1]
            if nxt.role == "assistant" and nxt.session == turns[i].session:
                group.add(nxt.id)
    return (frozenset(group),) if group else ()


def coverage(evidence: Probe | Sequence[Collection[str]], visible: Collection[str]) -> Coverage:
    """Whether all (and whether any) evidence groups are visible.

    ``evidence``: the groups, or a probe (each evidence turn its own group).
    """
    groups = [frozenset({e}) for e in evidence.evidence] if isinstance(evidence, Probe) \
        else [frozenset(g) for g in evidence]
    hits = [any(t in visible for t in g) for g in groups]
    return Coverage(bool(groups) and all(hits), any(hits))


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
