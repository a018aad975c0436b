"""Hypothesis properties: belady is never beaten, limits and protect always hold."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from copage.core.cache import PageCache
from copage.core.policies import POLICIES, EvictionPolicy, get_policy

VOCAB = ["peanut", "allergy", "thai", "budget", "rust", "deadline", "doctor", "paris"]
ONLINE = [n for n in POLICIES.names() if n != "belady"]

Event = tuple[int, str | None, frozenset[int]]  # page, query before it, protected pages

events = st.lists(
    st.tuples(
        st.integers(0, 7),
        st.none() | st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3).map(" ".join),
        st.frozensets(st.integers(0, 7), max_size=3),
    ),
    max_size=40,
)
texts = st.lists(st.lists(st.sampled_from(VOCAB), max_size=6).map(" ".join), min_size=8, max_size=8)


def make(name: str, future: list[str]) -> EvictionPolicy:
    return get_policy(name, future=future) if name == "belady" else get_policy(name)


def drive(
    policy: EvictionPolicy,
    evs: list[Event],
    page_texts: list[str],
    capacity: int | None,
    *,
    budget: int | None = None,
    use_protect: bool = False,
) -> PageCache:
    """Run events, checking limit and protect after every step."""
    size_of = (lambda p: 1 + int(p[1:]) % 3) if budget is not None else None
    cache = PageCache(policy, capacity, token_budget=budget, size_of=size_of)
    for page, query, prot in evs:
        pid = f"p{page}"
        protect = {f"p{q}" for q in prot} if use_protect else set()
        before = cache.resident
        if query is not None:
            cache.set_query(query)
        if pid in cache.history.first:
            evicted = cache.access(pid, protect=protect).evicted
        else:
            cache.set_page_text(pid, page_texts[page])
            evicted = cache.admit(pid, protect=protect)
        assert pid in cache.resident
        if capacity is not None:
            assert len(cache.resident) <= capacity
        if budget is not None and len(cache.resident) > 1:
            assert cache.tokens <= budget
        if any(v in protect for v in evicted):
            unprotected = set(before) - {pid} - protect
            assert unprotected <= set(evicted), "a protected page went while others could"
    return cache


@settings(max_examples=100, deadline=None)
@given(evs=events, page_texts=texts, capacity=st.integers(1, 5))
def test_belady_never_has_fewer_hits(
    evs: list[Event], page_texts: list[str], capacity: int
) -> None:
    future = [f"p{p}" for p, _, _ in evs]
    best = drive(make("belady", future), evs, page_texts, capacity).hits
    for name in ONLINE:
        hits = drive(make(name, future), evs, page_texts, capacity).hits
        assert hits <= best, f"{name} {hits} hits > belady {best}"


@settings(max_examples=40, deadline=None)
@given(evs=events, page_texts=texts, capacity=st.integers(1, 5), budget=st.integers(0, 8))
def test_limits_and_protect_hold(
    evs: list[Event], page_texts: list[str], capacity: int, budget: int
) -> None:
    future = [f"p{p}" for p, _, _ in evs]
    for name in POLICIES.names():
        drive(make(name, future), evs, page_texts, capacity, use_protect=True)
        drive(make(name, future), evs, page_texts, None, budget=budget, use_protect=True)
