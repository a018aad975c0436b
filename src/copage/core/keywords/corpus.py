"""Incremental term statistics over the closed pages of one conversation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from copage.core.keywords.terms import term_counts
from copage.core.types import Page, PageId


class Corpus:
    """Term counts of the pages added so far (unigram and bigram terms, see ``terms``).

    ``add`` costs O(len(text)); every query is O(1) or O(size of one page), so an
    extractor that reads its page's counts and looks up corpus statistics per
    candidate never pays for the length of the conversation. Pages cannot be
    replaced; the latest can be removed (``remove``: a page close taken back).
    """

    def __init__(self) -> None:
        self._tf: dict[PageId, Mapping[str, int]] = {}
        self._df: Counter[str] = Counter()
        self._cf: Counter[str] = Counter()
        self._total = 0

    @classmethod
    def from_pages(cls, pages: Iterable[Page]) -> Corpus:
        """A corpus holding ``pages`` (their ``text``)."""
        corpus = cls()
        for page in pages:
            corpus.add(page.id, page.text)
        return corpus

    def add(self, pid: PageId, text: str) -> None:
        """Add a closed page's text; raises ``ValueError`` if ``pid`` is already present."""
        if pid in self._tf:
            raise ValueError(f"page {pid!r} is already in the corpus (pages cannot be replaced)")
        counts = term_counts(text)
        self._tf[pid] = MappingProxyType(counts)
        self._df.update(counts.keys())
        self._cf.update(counts)
        self._total += sum(counts.values())

    def remove(self, pid: PageId) -> None:
        """Take back the latest ``add`` of ``pid`` (a page whose closing is undone);
        ``KeyError`` if absent. O(size of the page)."""
        counts = self._tf.pop(pid)
        self._df.subtract(counts.keys())
        self._cf.subtract(counts)
        for term in counts:
            if self._df[term] <= 0:
                del self._df[term]
            if self._cf[term] <= 0:
                del self._cf[term]
        self._total -= sum(counts.values())

    @property
    def n_pages(self) -> int:
        """Number of pages added."""
        return len(self._tf)

    @property
    def total(self) -> int:
        """Number of term occurrences over all pages (unigrams and bigrams)."""
        return self._total

    def df(self, term: str) -> int:
        """Number of pages containing ``term``."""
        return self._df.get(term, 0)

    def cf(self, term: str) -> int:
        """Occurrences of ``term`` over all pages (collection frequency)."""
        return self._cf.get(term, 0)

    def tf(self, pid: PageId) -> Mapping[str, int]:
        """Term counts of one page (read-only); raises ``KeyError`` for an unknown page."""
        try:
            return self._tf[pid]
        except KeyError:
            raise KeyError(f"page {pid!r} is not in the corpus") from None

    def page_ids(self) -> list[PageId]:
        """Ids of the pages added, in order of adding."""
        return list(self._tf)

    def __contains__(self, pid: object) -> bool:
        return pid in self._tf

    def __len__(self) -> int:
        return len(self._tf)
