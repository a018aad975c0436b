"""The text of the recall tool's answers, as the model reads them.

:mod:`copage.core.recall_tool` decides what a recall does (pages a page in,
finds it resident, or answers an error); this module writes what the model is told.
:class:`RecallResult` is re-exported by :mod:`copage.core.pager`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from copage.core import prompt
from copage.core.groups import Group, group_name
from copage.core.types import PageId, Turn


@dataclass(frozen=True, slots=True)
class RecallResult:
    """Outcome of one recall: ``status`` is ``paged_in``, ``resident`` or ``error``."""

    status: str
    text: str
    page: PageId | None = None


def paged_in(pid: PageId, turns: Sequence[Turn], group: Group | None = None) -> RecallResult:
    """A page paged in: its messages (from a group's range: which page that is)."""
    text = prompt.page_block(pid, turns)
    if group is not None:
        text = f"From {group.name}, the page that best matches the question:\n" + text
    return RecallResult("paged_in", text, pid)


def resident(pid: PageId) -> RecallResult:
    """A page already in context."""
    return RecallResult("resident", f"{pid} is already in context (its messages are shown above).",
                        pid)


def group_resident(group: Group) -> RecallResult:
    """A group's range with no evicted page."""
    return RecallResult("resident", f"every page of {group.name} is already in context.")


def error(text: str) -> RecallResult:
    """An error answer (``text`` is also the event's message)."""
    return RecallResult("error", f"error: {text}")


def valid_pages(evicted: Sequence[PageId]) -> str:
    """The tail of an error about a page: which pages can be recalled."""
    if not evicted:
        return " No page is evicted."
    shown = ", ".join(evicted[:20]) + (", ..." if len(evicted) > 20 else "")
    return f" Evicted pages: {shown}."


def not_a_query(name: str) -> str:
    return f"{name}() takes a page id such as \"p3\", not a query."


def page_and_query(name: str) -> str:
    return f"give exactly one of page or query to {name}()."


def bad_page(name: str, page: object, evicted: Sequence[PageId]) -> str:
    return f"{name}() needs a page id such as \"p3\"; got {str(page)[:40]!r}." + valid_pages(
        evicted)


def no_page(idx: int, evicted: Sequence[PageId]) -> str:
    return f"there is no page p{idx + 1}." + valid_pages(evicted)


def no_group(span: tuple[int, int], groups: Sequence[Group], evicted: Sequence[PageId]) -> str:
    shown = ", ".join(g.name for g in groups) or "none"
    return f"there is no group {group_name(*span)}; groups: {shown}." + valid_pages(evicted)


BAD_QUERY = "the query must be a few words describing what you need."
NOTHING_EVICTED = "no page is evicted: everything is already in context."


def no_match(query: str) -> str:
    return f"no evicted page matches {query[:60]!r}."
