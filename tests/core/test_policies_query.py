"""query: BM25 relevance against an independent formula, eviction by relevance, LRU guard."""

from __future__ import annotations

import math
import random

import pytest

from copage.core.cache import PageCache, replay
from copage.core.policies import get_policy
from copage.core.policies.query import QueryPolicy
from copage.core.retrieval import BM25Index
from copage.core.text import content_words

VOCAB = [
    "peanut",
    "allergy",
    "thai",
    "restaurant",
    "budget",
    "rust",
    "deadline",
    "doctor",
    "flight",
    "paris",
    "dog",
]


def bm25_reference(query: list[str], docs: dict[str, list[str]], pid: str) -> float:
    """Okapi BM25 written out from the formula, k1=1.5, b=0.75."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs.values()) / n
    doc = docs[pid]
    score = 0.0
    for term in query:
        df = sum(term in d for d in docs.values())
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        f = doc.count(term)
        score += idf * f * 2.5 / (f + 1.5 * (0.25 + 0.75 * len(doc) / avgdl))
    return score


def test_bm25_matches_formula_including_replaced_texts() -> None:
    rng = random.Random(2)
    index: BM25Index[str] = BM25Index()
    docs: dict[str, list[str]] = {}
    for i in range(60):
        pid = f"p{rng.randrange(12)}"  # some pages get new text: df must be updated
        docs[pid] = rng.choices(VOCAB, k=rng.randint(0, 12))
        index.set(pid, docs[pid])
        query = rng.choices(VOCAB, k=rng.randint(0, 4))
        for p in docs:
            assert math.isclose(index.score(query, p), bm25_reference(query, docs, p)), i
    assert index.score(["peanut"], "unknown") == 0.0


def test_evicts_least_relevant_page() -> None:
    cache = PageCache(QueryPolicy(), 2)
    texts = {
        "p1": "Alice has a peanut allergy, no satay at the Thai restaurant",
        "p2": "We talked about the Rust deadline for the compiler project",
        "p3": "Flight to Paris booked for March",
    }
    cache.set_page_text("p1", texts["p1"])
    cache.admit("p1")
    cache.set_page_text("p2", texts["p2"])
    cache.admit("p2")
    cache.set_query("Which restaurant is safe with her peanut allergy?")
    cache.set_page_text("p3", texts["p3"])
    assert cache.admit("p3") == ["p2"]  # LRU would have evicted p1
    assert replay(["p1", "p2", "p3"], "lru", 2).evictions == 1


def test_without_query_or_texts_equals_lru() -> None:
    rng = random.Random(8)
    for _ in range(300):
        trace = [f"p{rng.randrange(8)}" for _ in range(rng.randint(1, 60))]
        k = rng.randint(1, 4)
        assert replay(trace, "query", k).hits == replay(trace, "lru", k).hits


def drive(policy: QueryPolicy, trace: list[tuple[str, str]], k: int) -> PageCache:
    cache = PageCache(policy, k)
    for pid, query in trace:
        cache.set_query(query)
        if pid in cache.history.first:
            cache.access(pid)
        else:
            cache.set_page_text(pid, f"notes about {pid} topic{pid}")
            cache.admit(pid)
    return cache


def test_misleading_queries_fall_back_to_lru() -> None:
    # each query points at a page that will NOT be used next: the predictor keeps
    # the wrong pages, misses more than LRU, and LRU takes over
    rng = random.Random(1)
    pages = [f"p{i}" for i in range(6)]
    trace: list[tuple[str, str]] = []
    for _ in range(150):
        nxt = rng.choice(pages[:3])
        decoy = rng.choice(pages[3:])
        trace.append((nxt, f"topic{decoy}"))
    trace = [(p, f"topic{p}") for p in pages] + trace
    policy = QueryPolicy()
    cache = drive(policy, trace, 3)
    assert policy.predicted.misses > policy.lru.misses
    assert policy.following == "lru"
    lru_misses = replay([p for p, _ in trace], "lru", 3).misses
    assert policy.lru.misses == lru_misses
    assert cache.misses <= policy.predicted.misses


def test_helpful_queries_beat_lru() -> None:
    rng = random.Random(3)
    pages = [f"p{i}" for i in range(6)]
    seq = pages + [rng.choice(pages) for _ in range(150)]
    # the query asked at each access names the page the next access will use
    trace = [(p, f"topic{q}") for p, q in zip(seq, seq[1:] + seq[:1], strict=True)]
    policy = QueryPolicy()
    cache = drive(policy, trace, 3)
    assert policy.following == "query"
    assert cache.misses == policy.predicted.misses
    assert cache.misses < replay([p for p, _ in trace], "lru", 3).misses


def test_query_tokens_use_content_words() -> None:
    policy = QueryPolicy()
    policy.set_query("What is the Peanut thing?")
    assert policy._query_tokens == content_words("What is the Peanut thing?") == ["peanut", "thing"]


@pytest.mark.parametrize(("opts", "match"), [({"k1": -1}, "k1"), ({"b": 2}, "b in")])
def test_bad_options(opts: dict[str, float], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        get_policy("query", **opts)
