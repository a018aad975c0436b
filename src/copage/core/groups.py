"""A bounded, multi-level bookmark index: older pages folded into groups.

With a flat index every evicted page has a bookmark line, so the index grows
with the conversation (12,000 tokens at 10,000 turns). With ``index="grouped"``
(the library default) the index has a token cap (``PagerConfig.index_tokens``).
When the lines would exceed it, the oldest ungrouped pages are folded into a
*group*, one line standing for a contiguous range of pages
(``[p1-p8:pottery, camping, Oscar, adoption]``), whose keywords are the
extractor's for the range's text taken as one page. When no more pages can be
folded (the newest ``resident_pages`` pages stay ungrouped), the two oldest
adjacent groups of equal size merge into one twice as large: older parts of
the conversation are kept at a coarser grain, like the levels of a page table.

Folding works in batches: it runs only when the cap is exceeded and then goes
down to ``REFILL`` of the cap, so between batches the index only gains lines at
its end (a newly evicted page) or loses one (a page paged in): the prompt's
prefix stays cacheable. A page inside a group keeps its own bookmark (stored,
shown by ``bookmark()``) but not its line. ``recall`` of a group's range pages
in the group's page that best matches the latest user message.

Units (``group_by``): ``range`` folds ``group_pages`` pages at a time;
``session`` folds the pages of the oldest ungrouped session (pages whose first
turn is in it), falling back to ``range`` for turns without sessions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from copage.core.types import Bookmark, Page, render_turns

REFILL = 0.75
"""A batch of folding stops once the index is at most this share of its cap."""
GROUP_BYS = ("range", "session")
INDEXES = ("flat", "grouped")
MIN_INDEX_TOKENS = 64
"""Smallest cap accepted: room for a few group lines."""
_RANGE = re.compile(r"^\s*\[?p(\d{1,9})\s*-\s*p?(\d{1,9})\]?\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Group:
    """Pages ``start`` to ``end - 1`` (0-based indexes) shown as one bookmark line."""

    start: int
    end: int
    bookmark: Bookmark

    @property
    def name(self) -> str:
        """The range as the model writes it: ``p1-p8``."""
        return group_name(self.start, self.end)

    @property
    def size(self) -> int:
        return self.end - self.start


def group_name(start: int, end: int) -> str:
    """``p{start+1}-p{end}``: the 1-based page range of a group."""
    return f"p{start + 1}-p{end}"


def parse_range(value: object) -> tuple[int, int] | None:
    """``"p3-p10"`` (or ``"p3-10"``) -> (2, 10) as (start, end); None if not a range."""
    if not isinstance(value, str):
        return None
    m = _RANGE.match(value)
    if m is None:
        return None
    a, b = int(m.group(1)), int(m.group(2))
    return (a - 1, b) if 1 <= a <= b else None


def group_page(pages: Sequence[Page], start: int, end: int) -> Page:
    """The pages ``start..end-1`` as one page (id = the range name), for keyword extraction."""
    turns = tuple(t for p in pages[start:end] for t in p.turns)
    return Page(group_name(start, end), start, turns, render_turns(turns),
                sum(p.tokens for p in pages[start:end]))


def fold_unit(pages: Sequence[Page], start: int, limit: int, group_by: str, size: int) -> int:
    """End (exclusive) of the next unit to fold from page ``start``, at most ``limit``;
    ``start`` if no whole unit fits before ``limit``."""
    if group_by == "session":
        session = pages[start].turns[0].session if start < len(pages) else None
        if session is not None:
            end = start
            while end < len(pages) and pages[end].turns[0].session == session:
                end += 1
            # A session still going on (its last page is the newest) is not whole yet.
            return end if end <= limit and end < len(pages) else start
    return start + size if start + size <= limit else start


def merge_pair(groups: Sequence[Group]) -> int | None:
    """Index ``i`` of the oldest adjacent pair ``(i, i + 1)`` to merge: equal sizes
    first (levels double), else the pair of smallest total size; None if < 2 groups."""
    if len(groups) < 2:
        return None
    for i in range(len(groups) - 1):
        if groups[i].size == groups[i + 1].size:
            return i
    return min(range(len(groups) - 1), key=lambda i: (groups[i].size + groups[i + 1].size, i))
