"""What a call of the recall tool does: which page it pages in, or which error it answers.

:meth:`copage.core.pager.Pager.recall` delegates here. A recall names a page
(``p3``), a group's range (``p1-p8``: its evicted page best matching the latest user
message) or, when ``recall_by_query`` is on, a query (the evicted page best matching
it). The text the model is told is :mod:`copage.core.recall_text`'s.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Protocol

from copage.core import recall_text as answer
from copage.core.config import PagerConfig
from copage.core.evicted_search import EvictedMatch
from copage.core.groups import Group, parse_range
from copage.core.pager_stats import Counters
from copage.core.recall_text import RecallResult
from copage.core.retrieval import bm25_scores
from copage.core.text import content_words, index_terms
from copage.core.types import Page, PageId, Turn, page_id, parse_page_arg

__all__ = ["Recalling", "recall"]


class Recalling(Protocol):
    """The pager's fields and operations that a recall uses."""

    config: PagerConfig
    counters: Counters
    turns: list[Turn]
    pages: list[Page]
    _evicted_set: set[int]

    @property
    def groups(self) -> list[Group]: ...

    @property
    def evicted(self) -> list[PageId]: ...

    def is_resident(self, pid: PageId) -> bool: ...

    def access(self, pid: PageId, *, protect: Collection[PageId] = (),
               kind: str = "probe") -> bool: ...

    def search_evicted(self, text: str) -> EvictedMatch: ...

    def _event(self, kind: str, idx: int | None, detail: dict[str, Any] | None = None) -> None: ...


def recall(pager: Recalling, page: object = None, *, query: object = None) -> RecallResult:
    """The recall tool (see ``Pager.recall``). Never raises."""
    pager.counters.recalls += 1
    name = pager.config.tool_name
    if query is not None and page is None:
        if not pager.config.recall_by_query:
            return _error(pager, answer.not_a_query(name))
        return _by_query(pager, query)
    if page is not None and query is not None:
        return _error(pager, answer.page_and_query(name))
    span = parse_range(page)
    if span is not None:
        return _group(pager, span)
    idx = parse_page_arg(page)
    if idx is None:
        return _error(pager, answer.bad_page(name, page, pager.evicted))
    if idx >= len(pager.pages):
        return _error(pager, answer.no_page(idx, pager.evicted))
    pid = page_id(idx)
    if pager.is_resident(pid):
        pager.access(pid, kind="recall")
        pager._event("recall", idx, {"status": "resident"})
        return answer.resident(pid)
    pager.access(pid, kind="recall")
    pager._event("recall", idx, {"status": "paged_in"})
    return answer.paged_in(pid, pager.pages[idx].turns)


def _group(pager: Recalling, span: tuple[int, int]) -> RecallResult:
    """Recall of a group's range: page in its evicted page best matching the latest
    user message (BM25 over the pages' text; ties and no match: the earliest)."""
    group = next((g for g in pager.groups if (g.start, g.end) == span), None)
    if group is None:
        return _error(pager, answer.no_group(span, pager.groups, pager.evicted))
    members = [i for i in range(group.start, group.end) if i in pager._evicted_set]
    if not members:
        pager._event("recall", None, {"status": "resident", "group": group.name})
        return answer.group_resident(group)
    question = next((t.text for t in reversed(pager.turns) if t.role == "user"), "")
    scores = bm25_scores(index_terms(question),
                         [index_terms(pager.pages[i].text) for i in members])
    best = members[max(range(len(members)), key=lambda j: (scores[j], -j))]
    pid = page_id(best)
    pager.access(pid, kind="recall")
    pager._event("recall", best, {"status": "paged_in", "group": group.name})
    return answer.paged_in(pid, pager.pages[best].turns, group)


def _by_query(pager: Recalling, query: object) -> RecallResult:
    """Recall by query: page in the evicted page that best matches it."""
    if not isinstance(query, str) or not content_words(query):
        return _error(pager, answer.BAD_QUERY)
    if not pager._evicted_set:
        return _error(pager, answer.NOTHING_EVICTED)
    best = pager.search_evicted(query).index
    if best is None:
        return _error(pager, answer.no_match(query))
    pid = page_id(best)
    pager.access(pid, kind="recall")
    pager._event("recall", best, {"status": "paged_in", "query": query[:200]})
    return answer.paged_in(pid, pager.pages[best].turns)


def _error(pager: Recalling, text: str) -> RecallResult:
    """A recall that failed: counted, logged, and answered with ``text``."""
    pager.counters.recall_errors += 1
    pager._event("recall", None, {"status": "error", "message": text[:300]})
    return answer.error(text)
