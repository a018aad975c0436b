"""Probes: questions asked of a :class:`~copage.session.PagedChat` without adding them to
the conversation, and the oracle's policy clock (the benchmark's, not the runtime's).

:func:`ask_probe` runs a question through the chat's own turn (speculative fill, the
choose step, the recall engine) inside a transaction of the chat's memory: recalls and
chosen page-ins change the resident set as in a turn (the fill is shown for the probe
only); with ``keep_pages=False`` they are rolled back afterwards. See ``docs/loop.md``.
"""

from __future__ import annotations

from collections.abc import Sequence

from copage.core.types import PageId
from copage.llm.model_types import run_sync
from copage.memory import PagedMemory
from copage.session.loop import PagedChat, _check_style, _check_text, _End
from copage.session.modes import parse_mode
from copage.session.records import ProbeRecord

__all__ = ["ask_probe", "ask_probe_sync", "begin_probe", "end_probe", "set_policy_clock"]


class _Discard(Exception):
    """Internal: leave a transaction without storing it."""


def begin_probe(mem: PagedMemory, question: str) -> None:
    """Start a question that is not a turn (a probe): pages recalled before are no
    longer protected, and query-aware eviction scores pages against ``question``."""
    pager = mem.pager_for_change()
    pager.begin_turn()
    pager.cache.set_query(question)


def end_probe(mem: PagedMemory) -> None:
    """After a probe: query-aware eviction scores against the latest user turn again."""
    pager = mem.pager_for_change()
    pager.cache.set_query(
        next((t.text for t in reversed(pager.turns) if t.role == "user"), None))


def set_policy_clock(mem: PagedMemory, position: int) -> bool:
    """Tell a replacement policy that follows a planned access sequence (the oracle's
    ``at``) that the next access is ``position``; False (nothing done) for a policy
    without such a clock."""
    at = getattr(mem.pager_for_change().cache.policy, "at", None)
    if at is None:
        return False
    at(position)
    return True


async def ask_probe(
    chat: PagedChat, question: str, needed_pages: Sequence[PageId] = (), *,
    force_recall: bool = False, keep_pages: bool = True,
    recall_mode: str | None = None, prompt: str | None = None,
) -> ProbeRecord:
    """Ask ``chat`` a question without adding it (or the answer) to the conversation.

    Recalls and chosen page-ins change the resident set like in a turn (the
    speculative fill is shown for the probe only); with ``keep_pages=False`` they
    are rolled back afterwards. Returns
    which needed pages were evicted at the start, paged in speculatively and
    recalled. ``recall_mode`` and ``prompt`` override the chat's for this probe.
    """
    _check_text(question, "question")
    mode = chat.mode if recall_mode is None else parse_mode(recall_mode, model=chat.model)
    style = chat.prompt if prompt is None else _check_style(prompt)
    async with chat._lock:
        mem = chat.memory
        known = {p.id for p in mem.pages}
        bad = [p for p in needed_pages if p not in known]
        if bad:
            raise ValueError(f"unknown needed page(s) {bad}; pages are p1..p{len(known)}")
        evicted = set(mem.evicted)
        needed = tuple(needed_pages)
        record: ProbeRecord | None = None
        try:
            with mem.transaction():
                begin_probe(mem, question)  # pages recalled by an earlier probe are fair game
                end: _End | None = None
                events = chat._turn(mem, question, question, force_recall, False, mode, style)
                async for event in events:
                    if isinstance(event, _End):
                        end = event
                assert end is not None
                end_probe(mem)
                report = chat._report(end, None, None, mode)
                record = ProbeRecord(
                    needed, tuple(p for p in needed if p in evicted), report.speculative,
                    report.recalls, question, report.answer, report,
                )
                if not keep_pages:
                    raise _Discard
        except _Discard:
            pass
    assert record is not None
    return record


def ask_probe_sync(
    chat: PagedChat, question: str, needed_pages: Sequence[PageId] = (), *,
    force_recall: bool = False, keep_pages: bool = True,
    recall_mode: str | None = None, prompt: str | None = None,
) -> ProbeRecord:
    """:func:`ask_probe` from synchronous code."""
    return run_sync(ask_probe(
        chat, question, needed_pages, force_recall=force_recall, keep_pages=keep_pages,
        recall_mode=recall_mode, prompt=prompt,
    ))
