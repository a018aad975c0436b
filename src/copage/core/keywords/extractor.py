"""The keyword extractor protocol and helpers shared by the extractors."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

from copage.core.keywords.corpus import Corpus
from copage.core.types import Page, PageId

DEFAULT_N_KEYWORDS = 4
"""Keywords per bookmark when not chosen (the paper uses four)."""


@runtime_checkable
class KeywordExtractor(Protocol):
    """Chooses the keywords of a page's bookmark."""

    name: str
    # Optional class attributes the pager reads through :func:`uses_corpus` and
    # :func:`refreshes_with_corpus` (not protocol members, so older extractors still fit):
    # ``uses_corpus: bool`` and ``refresh_with_corpus: bool``.

    def extract(
        self, page: Page, corpus: Corpus, n: int, *, taken: Mapping[str, int] | None = None
    ) -> tuple[str, ...]:
        """Up to ``n`` keywords for ``page``; ``corpus`` holds the conversation's closed pages."""
        ...

    def extract_all(self, pages: Sequence[Page], n: int) -> dict[PageId, tuple[str, ...]]:
        """Keywords of every page of a finished conversation (offline batch)."""
        ...


def uses_corpus(extractor: KeywordExtractor) -> bool:
    """Whether ``extractor`` reads the corpus, so a pager must keep one for it.

    Its ``uses_corpus`` attribute; an extractor that does not say is assumed to read it.
    """
    return bool(getattr(extractor, "uses_corpus", True))


def refreshes_with_corpus(extractor: KeywordExtractor) -> bool:
    """Whether a page's keywords by ``extractor`` change as the corpus grows, so a pager
    re-extracts old evicted bookmarks (its ``refresh_with_corpus`` attribute; an extractor
    that does not say is not refreshed: a refresh may be a model call)."""
    return bool(getattr(extractor, "refresh_with_corpus", False))


def check_n(n: object) -> int:
    """Return ``n`` if it is a non-negative int, else raise ``ValueError``."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n (keywords per bookmark) must be a non-negative integer, got {n!r}")
    return n


def stable_seed(*parts: object) -> int:
    """A 64-bit seed from ``parts`` that is the same in every process (unlike ``hash``)."""
    digest = hashlib.blake2b(repr(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def taken_count(taken: Mapping[str, int] | None, term: str, display: str) -> int:
    """How many other bookmarks use ``term`` (looked up lower-cased and as displayed)."""
    if not taken:
        return 0
    count = taken.get(term, 0)
    if display != term:
        count += taken.get(display, 0)
    return count


class BatchByCorpus:
    """Mixin: ``extract_all`` builds a corpus of all pages and extracts page by page."""

    def extract(
        self, page: Page, corpus: Corpus, n: int, *, taken: Mapping[str, int] | None = None
    ) -> tuple[str, ...]:
        raise NotImplementedError

    def extract_all(self, pages: Sequence[Page], n: int) -> dict[PageId, tuple[str, ...]]:
        """Keywords of every page, with the whole conversation as the corpus."""
        check_n(n)
        corpus = Corpus.from_pages(pages)
        return {page.id: self.extract(page, corpus, n) for page in pages}
