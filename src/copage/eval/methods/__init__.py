"""The benchmark's methods (paper section 4) and copage's variants, by name.

Every method bills at most ``MethodSettings.budget`` prompt tokens per probe, summed
over all its calls (a probe that cannot fit "does not fit" and is a miss):

============================  ==============================================================
``full_context``              the most recent turns that fit
``truncation``                the last ``window`` (20) turns
``bm25``                      last 20 turns (at most half the budget) + evicted units that
                              match the question by BM25, best first, while they fit
``word_overlap``              the same ranked by word overlap
``search_tool``               last 20 turns (at most a quarter of the budget) + a
                              ``memory_search(query)`` tool (BM25 units that fit in what
                              is left of the budget)
``bookmark_recall``           copage as in the paper: resident pages within the budget,
                              bookmarks, ``recall(page)``
``bookmark_recall+query``     ... and ``recall`` also takes a free-text ``query``
``bookmark_recall+speculative`` ... and the speculative fill first: the best BM25-matching
                              evicted pages that fit the fill allowance (the budget plan's
                              room after the resident window), shown before the question
``bookmark_recall+choose``    PagedChat's ``choose`` mode: one constrained call picks a page
                              from the bookmarks, then the answer (no tool offered)
``bookmark_recall+choose+tool`` ``choose``, with the recall tool still offered
``bookmark_recall+choose+speculative`` the speculative fill, then ``choose``
``bookmark_recall+copage``    copage's defaults: ``PagerConfig()`` (fixed_10, lru, k=4, askable,
                              the grouped index) and PagedChat's default recall mode
                              (:data:`~copage.session.DEFAULT_RECALL_MODE`, ``speculative``)
``bookmark_recall+copage+tool`` the same with the bookmarks and the recall tool beside the
                              fill (recall mode ``speculative+tool``), the budget planned for
                              one recall round trip
``bm25@fixed_10`` ...         ``<baseline>@<units>`` (:mod:`.pages`): ``bm25``, ``word_overlap``
                              or ``search_tool`` over pages of ``<units>`` behind exactly the
                              resident window of ``bookmark_recall+copage`` at the budget
============================  ==============================================================

Units (retrieval candidates, pages) are sessions (``boundary="session"``) or pages
of the boundary strategy; the paper's retrieval rows use ``MethodSettings.boundary``
(sessions on LoCoMo) behind the last ``window`` turns. Each method's rule and its LLM-free reference reader are
in ``docs/benchmark-methods.md``.
"""

from __future__ import annotations

from copage.core.registry import Registry
from copage.eval.methods.bookmark import BookmarkMethod
from copage.eval.methods.bookmark_variant import Variant
from copage.eval.methods.method import (
    ABSTAIN_ANSWER,
    DEFAULT_BUDGET,
    INSTRUCTION,
    CallRecord,
    Method,
    MethodAnswer,
    MethodPrompt,
    MethodSettings,
    PreparedConversation,
    RecallInfo,
    message_tokens,
    request_tokens,
)
from copage.eval.methods.pages import (
    BASELINES,
    SEPARATOR,
    PagesMethod,
    check_units,
    page_baselines,
    pages_method,
    split_name,
)
from copage.eval.methods.recorder import Recorder
from copage.eval.methods.search import SearchToolMethod
from copage.eval.methods.units import Coverage, Unit, coverage, evidence_groups, split_units
from copage.eval.methods.window import WindowMethod
from copage.session.modes import DEFAULT_RECALL_MODE

PAPER_METHODS: tuple[str, ...] = (
    "full_context", "truncation", "bm25", "word_overlap", "search_tool", "bookmark_recall",
)
COPAGE_VARIANTS: tuple[str, ...] = (
    "bookmark_recall+query", "bookmark_recall+speculative", "bookmark_recall+copage",
    "bookmark_recall+choose", "bookmark_recall+choose+tool",
)
DEFAULT_UNITS: tuple[str, ...] = ("fixed_10", "fixed_5")
"""The units of the page baselines (``<baseline>@<units>``) in ``main``'s default list:
copage's default pages (fixed_10) and finer ones."""
#: The three most competitive methods of the paper (its Tables 5-6).
COMPETITIVE: tuple[str, ...] = ("bookmark_recall", "full_context", "bm25")

_ALL: dict[str, Method] = {
    "full_context": WindowMethod("full_context", "the most recent full_window turns", full=True),
    "truncation": WindowMethod("truncation", "the last window turns"),
    "bm25": WindowMethod("bm25", "last window turns + top-k evicted units by BM25", "bm25"),
    "word_overlap": WindowMethod("word_overlap", "last window turns + top-k by word overlap",
                                 "word_overlap"),
    "search_tool": SearchToolMethod(),
    "bookmark_recall": BookmarkMethod("bookmark_recall", "bookmarks + recall(page) (the paper)"),
    "bookmark_recall+query": BookmarkMethod(
        "bookmark_recall+query", "bookmarks + recall(page or query)", Variant(recall="query")),
    "bookmark_recall+speculative": BookmarkMethod(
        "bookmark_recall+speculative", "bookmarks + recall + speculative page-in",
        Variant(speculative=True)),
    "bookmark_recall+choose": BookmarkMethod(
        "bookmark_recall+choose", "bookmarks + one choose call picks a page, then the answer",
        Variant(recall="choose")),
    "bookmark_recall+choose+tool": BookmarkMethod(
        "bookmark_recall+choose+tool", "bookmarks + a choose call, then recall(page) still offered",
        Variant(recall="choose+tool")),
    "bookmark_recall+choose+speculative": BookmarkMethod(
        "bookmark_recall+choose+speculative", "bookmarks + speculative fill, then a choose call",
        Variant(recall="choose", speculative=True)),
    "bookmark_recall+copage": BookmarkMethod(
        "bookmark_recall+copage",
        f"copage's defaults: PagerConfig(), PagedChat's recall mode ({DEFAULT_RECALL_MODE}) "
        "and the default meaning channel (on by default: bundled int8 or fetched weights; "
        "COPAGE_DENSE=off turns it off; docs/dense.md)",
        Variant.of_mode(DEFAULT_RECALL_MODE, copage=True)),
    "bookmark_recall+copage+tool": BookmarkMethod(
        "bookmark_recall+copage+tool",
        "copage's defaults with the recall tool and the bookmarks beside the fill "
        "(recall mode speculative+tool)",
        Variant.of_mode("speculative+tool", copage=True)),
    "bookmark_recall+copage+dense": BookmarkMethod(
        "bookmark_recall+copage+dense",
        "copage's defaults with the fill's meaning channel required (FillSettings("
        "dense='auto'), docs/dense.md)",
        Variant(recall="none", speculative=True, copage=True, dense=True)),
}

METHODS: Registry[Method] = Registry("method")
for _name, _method in _ALL.items():
    METHODS.register(_name, lambda _m=_method: _m)


def get_method(name: str) -> Method:
    """The method named ``name`` (or ``<baseline>@<units>``, :mod:`.pages`); raises
    ``ValueError`` (``UnknownNameError``) listing the valid names."""
    if SEPARATOR in name:
        return pages_method(name)
    return METHODS.create(name)


def check_method(name: str) -> str:
    """``name`` if it names a method (a registered one or ``<baseline>@<units>``)."""
    if SEPARATOR in name:
        split_name(name)
        return name
    return METHODS.check(name)


def method_names(spec: str | None = None) -> list[str]:
    """Split a comma list of method names (``all``: every registered method and the page
    baselines over :data:`DEFAULT_UNITS`) and check each."""
    if spec is None or spec.strip() in ("", "all"):
        return [*_ALL, *page_baselines(DEFAULT_UNITS)]
    names = [s.strip() for s in spec.split(",") if s.strip()]
    for n in names:
        check_method(n)
    return names


__all__ = [
    "ABSTAIN_ANSWER",
    "BASELINES",
    "COMPETITIVE",
    "COPAGE_VARIANTS",
    "DEFAULT_BUDGET",
    "DEFAULT_UNITS",
    "INSTRUCTION",
    "METHODS",
    "PAPER_METHODS",
    "BookmarkMethod",
    "CallRecord",
    "Coverage",
    "Method",
    "MethodAnswer",
    "MethodPrompt",
    "MethodSettings",
    "PagesMethod",
    "PreparedConversation",
    "RecallInfo",
    "Recorder",
    "SearchToolMethod",
    "Unit",
    "Variant",
    "WindowMethod",
    "check_method",
    "check_units",
    "coverage",
    "evidence_groups",
    "get_method",
    "message_tokens",
    "method_names",
    "page_baselines",
    "request_tokens",
    "split_units",
]
