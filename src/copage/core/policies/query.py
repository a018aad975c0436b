"""Query: evict the page least relevant to the latest query, guarded by LRU."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from copage.core.policies._shadow import ShadowCache
from copage.core.policies.policy import JSON, EvictionPolicy, History, Limit, lru_key
from copage.core.retrieval import BM25Index
from copage.core.text import index_terms
from copage.core.types import PageId


class QueryPolicy(EvictionPolicy):
    """Learning-augmented paging with BM25 relevance as the predictor.

    The predictor (Lykouris & Vassilvitskii, ICML 2018; Wei, APPROX 2020) ranks
    resident pages by Okapi BM25 (:class:`copage.core.retrieval.BM25Index`, statistics
    over every page given a text) of their text against the latest query
    (``set_query``); the least relevant is evicted, ties (e.g. no query, or no
    text) by least recent use. Shadow caches record what this rule and plain LRU
    would each have missed; while the rule has missed more, LRU decides.
    """

    name: ClassVar[str] = "query"

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        if not (isinstance(k1, int | float) and isinstance(b, int | float)) or k1 < 0:
            raise ValueError(f"query needs numeric k1 >= 0 and b in [0, 1], got {k1!r}, {b!r}")
        if not 0 <= b <= 1:
            raise ValueError(f"query needs b in [0, 1], got {b!r}")
        self.k1, self.b = float(k1), float(b)
        self.bind(Limit(capacity=1))

    def bind(self, limit: Limit) -> None:
        """Forget texts, query and shadows."""
        self.index: BM25Index[PageId] = BM25Index(k1=self.k1, b=self.b)
        self.texts: dict[PageId, str] = {}
        self.query: str | None = None
        self._query_tokens: list[str] = []
        self.predicted = ShadowCache(self._relevance_key, limit)
        self.lru = ShadowCache(lru_key, limit)

    def set_query(self, text: str | None) -> None:
        """Use ``text`` as the query from now on (``None`` clears it)."""
        self.query = text
        self._query_tokens = index_terms(text) if text else []

    def set_page_text(self, pid: PageId, text: str) -> None:
        """Index (or re-index) the text of page ``pid``."""
        self.texts[pid] = text
        self.index.set(pid, index_terms(text))

    def relevance(self, pid: PageId) -> float:
        """BM25 of ``pid`` against the current query."""
        return self.index.score(self._query_tokens, pid)

    def _relevance_key(self, pid: PageId, history: History) -> tuple[float, ...]:
        return (self.relevance(pid), history.last[pid])

    @property
    def following(self) -> str:
        """``"query"`` or ``"lru"``: the rule the next eviction follows."""
        return "lru" if self.predicted.misses > self.lru.misses else "query"

    def observe(self, pid: PageId, history: History, now: int) -> None:
        """Feed the access to both shadows."""
        self.predicted.access(pid, history)
        self.lru.access(pid, history)

    def victim(self, candidates: Sequence[PageId], history: History, now: int) -> PageId:
        """Least relevant candidate, or LRU's while relevance has missed more."""
        key = lru_key if self.following == "lru" else self._relevance_key
        return min(candidates, key=lambda p: key(p, history))

    def state(self) -> JSON:
        """Query, page texts and shadows."""
        return {
            "query": self.query,
            "texts": dict(self.texts),
            "predicted": self.predicted.state(),
            "lru": self.lru.state(),
        }

    def load_state(self, state: JSON) -> None:
        """Restore query, texts (re-indexed) and shadows."""
        for pid, text in state.get("texts", {}).items():
            self.set_page_text(str(pid), str(text))
        self.set_query(state["query"])
        self.predicted.load_state(state["predicted"])
        self.lru.load_state(state["lru"])

    def __repr__(self) -> str:
        return f"QueryPolicy(k1={self.k1}, b={self.b})"
