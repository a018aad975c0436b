"""What the session's recall steps read and page in: :class:`PagedView`.

Both :class:`~copage.memory.PagedMemory` (the runtime: its changes are stored)
and a bare :class:`~copage.core.pager.Pager` (simulations in ``eval``) satisfy it,
so the prompt styles, the ``choose`` step and speculative page-in work on either,
and the runtime never reaches into the memory's own pager.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

from copage.core.config import PagerConfig
from copage.core.pager import EvictedMatch
from copage.core.passages import PassageIndex
from copage.core.retrieval import BM25Index
from copage.core.types import Bookmark, Page, PageId

__all__ = ["PagedView"]


class PagedView(Protocol):
    """A paged conversation as the recall steps see it."""

    @property
    def config(self) -> PagerConfig: ...

    @property
    def system(self) -> str | None: ...

    @property
    def pages(self) -> Sequence[Page]: ...

    @property
    def evicted(self) -> list[PageId]: ...

    @property
    def evicted_index(self) -> BM25Index[int]: ...

    @property
    def passages(self) -> PassageIndex: ...

    def bookmark(self, pid: PageId, /) -> Bookmark: ...

    def search_evicted(self, text: str, /) -> EvictedMatch: ...

    def is_resident(self, pid: PageId, /) -> bool: ...

    def access(self, pid: PageId, /, *, protect: Collection[PageId] = ...,
               kind: str = ...) -> bool: ...

    def note(self, kind: str, pid: PageId | None, detail: dict[str, Any] | None = ...,
             /) -> None: ...
