"""Retrieval baselines over pages, behind copage's default resident window (issue 30).

The paper's retrieval rows (``bm25``, ``word_overlap``, ``search_tool``) retrieve
whole LoCoMo *sessions* behind a window of the last 20 turns, while copage's default
(``bookmark_recall+copage``) shows pages of 10 turns behind its own resident
window. Their difference then mixes two things: the units and the window, and
paging. The rows here take both away: ``<baseline>@<units>`` (e.g.
``bm25@fixed_10``) shows *exactly* the recent turns ``bookmark_recall+copage``
keeps resident at the same budget (taken from its budget plan, so the window is the
same turns, not a similar size), and fills the rest of the budget with the units
of ``<units>`` (a boundary of ``copage simulate``: ``fixed_10`` is copage's default
pages, ``fixed_5``, ... or ``session``) that match the question, best first, by the
baseline's own rule. What is left between such a row and copage's default is what
copage adds over plain retrieval on the same units and window.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from copage.core.boundaries import BOUNDARIES
from copage.eval.datasets.probes import Conversation
from copage.eval.methods.bookmark import BookmarkConversation
from copage.eval.methods.bookmark_variant import Variant
from copage.eval.methods.method import MethodSettings
from copage.eval.methods.search import search_conversation
from copage.eval.methods.window import SCORERS, WindowConversation
from copage.session.modes import DEFAULT_RECALL_MODE

BASELINES: tuple[str, ...] = ("bm25", "word_overlap", "search_tool")
"""The retrieval baselines that can run behind copage's window."""
SEPARATOR = "@"
COPAGE_WINDOW = "copage's resident window"

_WINDOWS: dict[tuple[Any, ...], tuple[int, int]] = {}


def copage_window(conversation: Conversation, settings: MethodSettings) -> tuple[int, int]:
    """The first turn of ``bookmark_recall+copage``'s resident window at ``settings``
    (every turn from it on is resident: the longest such suffix) and how many turns
    it holds (memoised per conversation and settings)."""
    key = (conversation.id, len(conversation.turns), conversation.turns[-1].id
           if conversation.turns else "", settings)
    if key not in _WINDOWS:
        copage = BookmarkConversation(conversation, settings,
                                      Variant.of_mode(DEFAULT_RECALL_MODE, copage=True))
        visible = copage.state().visible
        start = len(conversation.turns)
        while start > 0 and conversation.turns[start - 1].id in visible:
            start -= 1
        if len(_WINDOWS) >= 256:
            _WINDOWS.pop(next(iter(_WINDOWS)))
        _WINDOWS[key] = (start, len(conversation.turns) - start)
    return _WINDOWS[key]


def split_name(name: str) -> tuple[str, str] | None:
    """``"bm25@fixed_10"`` -> ``("bm25", "fixed_10")``; None for a name without ``@``.

    Raises ValueError (naming the valid choices) for an unknown baseline or units.
    """
    if SEPARATOR not in name:
        return None
    base, units = name.split(SEPARATOR, 1)
    if base not in BASELINES:
        raise ValueError(f"unknown baseline {base!r} in method {name!r}; valid: "
                         f"{', '.join(BASELINES)} (each as <baseline>@<units>)")
    check_units(units)
    return base, units


def check_units(units: str) -> str:
    """``units`` if it names a boundary (``session``, ``fixed_10``, ...), else ValueError."""
    if units not in BOUNDARIES:
        raise ValueError(f"unknown units {units!r}; valid: {', '.join(BOUNDARIES.names())}")
    return units


@dataclass(frozen=True, slots=True)
class PagesMethod:
    """``<baseline>@<units>``: a retrieval baseline over ``units`` behind copage's window."""

    name: str
    baseline: str
    units: str
    uses_bookmarks: bool = False

    @property
    def description(self) -> str:
        """One line for listings."""
        return (f"{self.baseline} over {self.units} units behind {COPAGE_WINDOW} at the budget, "
                "the rest of the budget filled best first")

    def prepare(self, conversation: Conversation, settings: MethodSettings) -> WindowConversation:
        """Take copage's window at ``settings``, cut ``units``, index them."""
        start, _ = copage_window(conversation, settings)
        label = COPAGE_WINDOW  # the same for every conversation: one label per row
        ours = replace(settings, boundary=self.units)
        if self.baseline == "search_tool":
            return search_conversation(conversation, ours, start, label)
        return WindowConversation(conversation, ours, SCORERS[self.baseline], start=start,
                                  window_label=label)


def pages_method(name: str) -> PagesMethod:
    """The :class:`PagesMethod` named ``name`` (``<baseline>@<units>``)."""
    parts = split_name(name)
    if parts is None:
        raise ValueError(f"{name!r} is not <baseline>@<units>")
    return PagesMethod(name, *parts)


def page_baselines(units: tuple[str, ...], baselines: tuple[str, ...] = BASELINES) -> list[str]:
    """The names of every baseline over each of ``units`` (checked)."""
    return [f"{b}{SEPARATOR}{check_units(u)}" for u in units for b in baselines]
