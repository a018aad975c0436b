"""The pager's bookmark index: its groups, their token sums and the index's text.

:class:`GroupedIndex` keeps the part of a :class:`~copage.core.pager.Pager` that shows
evicted pages to the model: the groups (folded page ranges, oldest first; see
:mod:`copage.core.groups` for the folding rule), the tokens of their lines and of the
evicted pages' lines after them, and the index text, re-joined only when it changes.
The pager owns the pages, bookmarks and the evicted set and passes them in.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import zip_longest
from typing import Any

from copage.core import prompt
from copage.core.bookmarks import BookmarkFormat, make_bookmark
from copage.core.config import PagerConfig
from copage.core.groups import REFILL, Group, fold_unit, group_page, merge_pair
from copage.core.tokens import Tokenizer
from copage.core.types import Book, Page


class GroupedIndex:
    """The groups of a pager's bookmark index and the index's token sums and text."""

    def __init__(self, config: PagerConfig, tokenizer: Tokenizer, fmt: BookmarkFormat,
                 example_range: str) -> None:
        self.config = config
        self.tokenizer = tokenizer
        self.format = fmt
        self.example_range = example_range
        self.groups: list[Group] = []
        self.group_tokens = 0  # their lines' tokens plus the grouped header's
        self.tail_tokens = 0  # the evicted pages' lines after the last group
        self.lines: str | None = None  # the index text; None: re-join on next use

    @property
    def end(self) -> int:
        """Pages before this index are inside a group (0 without groups)."""
        return self.groups[-1].end if self.groups else 0

    def shown(self, idx: int, delta: int) -> None:
        """Page ``idx``'s bookmark line changed by ``delta`` tokens (shown or hidden)."""
        if idx >= self.end:
            self.tail_tokens += delta

    def tail(self, n_pages: int, evicted: Collection[int]) -> list[int]:
        """Evicted pages after the last group, in page order."""
        end = self.end
        if n_pages - end > 2 * len(evicted):  # few evicted pages (flat index: all pages)
            return sorted(i for i in evicted if i >= end)
        return [i for i in range(end, n_pages) if i in evicted]

    def text(self, books: Mapping[int, Book], n_pages: int, evicted: Collection[int]) -> str:
        """The bookmark lines: the groups' lines, then the evicted pages after them."""
        if self.lines is None:
            # bounded by the index cap, not by the conversation
            lines = [g.bookmark.text for g in self.groups]
            lines += [books[i].bookmark.text for i in self.tail(n_pages, evicted)]
            self.lines = prompt.bookmarks_block(
                lines, grouped=bool(self.groups), example_range=self.example_range,
                quoted=bool(getattr(self.format, "quotes", False)))
        return self.lines

    def entries(self, books: Mapping[int, Book], evicted: Collection[int]
                ) -> list[tuple[str, tuple[int, ...]]]:
        """Each line of the index and the evicted pages (indexes) it stands for."""
        out: list[tuple[str, tuple[int, ...]]] = [
            (g.bookmark.text, tuple(i for i in range(g.start, g.end) if i in evicted))
            for g in self.groups]
        end = self.end
        out.extend((books[i].bookmark.text, (i,)) for i in sorted(evicted) if i >= end)
        return out

    def tokens(self, bookmark_tokens: int) -> int:
        """Tokens of the index as shown, given the tokens of every evicted page's bookmark."""
        return self.group_tokens + self.tail_tokens if self.groups else bookmark_tokens

    def set(self, groups: list[Group], books: Mapping[int, Book], n_pages: int,
            evicted: Collection[int]) -> None:
        """Replace the groups and recount the sums."""
        self.groups = groups
        self.group_tokens = sum(g.bookmark.tokens for g in groups) + (
            self.tokenizer.count(prompt.group_note(self.example_range)) if groups else 0)
        self.tail_tokens = sum(books[i].bookmark.tokens for i in self.tail(n_pages, evicted))
        self.lines = None

    def make(self, pages: Sequence[Page], books: Mapping[int, Book], start: int, end: int,
             halves: tuple[Group, Group] | None = None) -> Group:
        """A group of pages ``start..end-1``: its pages' bookmark keywords taken in turn,
        best first (each page's first, then each page's second, ...), or for a merge of
        two groups (``halves``) theirs. Made without reading the pages again: extracting
        over the range's text cost 67 ms a group, a spike of several groups on a regroup
        turn, and routed 1.2 points better (docs/keywords.md, fifth round)."""
        page = group_page(pages, start, end)
        if halves is None:
            lists = [books[i].bookmark.keywords for i in range(start, end)]
        else:
            lists = [h.bookmark.keywords for h in halves]
        keywords = tuple(dict.fromkeys(k for rank in zip_longest(*lists) for k in rank
                                       if k is not None))[:self.config.n_keywords]
        return Group(start, end, make_bookmark(page, keywords, self.format, self.tokenizer,
                                               self.config.bookmark_tokens))

    def regroup(self, pages: Sequence[Page], books: Mapping[int, Book],
                evicted: Collection[int], bookmark_tokens: int) -> bool:
        """Fold old pages into groups, in one batch, when the index exceeds its cap
        (see :mod:`copage.core.groups`); True if it did."""
        cfg = self.config
        self.lines = None
        if self.tokens(bookmark_tokens) <= cfg.index_tokens:
            return False
        target = cfg.index_tokens * REFILL
        keep = cfg.resident_pages or 1
        n = len(pages)
        while self.tokens(bookmark_tokens) > target:
            start = self.end
            end = fold_unit(pages, start, n - keep, cfg.group_by, cfg.group_pages)
            if end > start:
                self.set([*self.groups, self.make(pages, books, start, end)], books, n, evicted)
            else:
                i = merge_pair(self.groups)
                if i is None:
                    break
                a, b = self.groups[i], self.groups[i + 1]
                merged = self.make(pages, books, a.start, b.end, (a, b))
                self.set([*self.groups[:i], merged, *self.groups[i + 2:]], books, n, evicted)
        return True

    def load(self, stored: Iterable[Sequence[Any]], pages: Sequence[Page],
             books: Mapping[int, Book], evicted: Collection[int],
             reuse: Iterable[Group] = ()) -> None:
        """Set the groups stored as ``[start, end, keywords]``. A group of ``reuse`` (the
        groups of an earlier pager of this conversation) stored unchanged is taken as it
        is: its line is made from the text of all its pages, which would make catching
        up O(pages)."""
        same = {(g.start, g.end, g.bookmark.keywords): g for g in reuse}
        groups = []
        for start, end, keywords in stored:
            a, b = int(start), int(end)
            kws = tuple(str(k) for k in keywords)
            group = same.get((a, b, kws))
            if group is None:
                group = Group(a, b, make_bookmark(group_page(pages, a, b), kws, self.format,
                                                  self.tokenizer))
            groups.append(group)
        self.set(groups, books, len(pages), evicted)
