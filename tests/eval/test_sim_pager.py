"""The evaluation's pagers (copage.eval.sim_pager): belady's future in a run-local
registry, replayed page cuts and bookmarks deferred to the end, on a plain Pager."""

from __future__ import annotations

import pytest

from copage.core.boundaries import get_boundary
from copage.core.config import PagerConfig
from copage.core.pager import Pager
from copage.core.paginate import paginate
from copage.core.policies import POLICIES
from copage.core.types import Turn
from copage.eval.sim_pager import simulation_pager, with_future


def test_belady_with_future_in_pager() -> None:
    cfg = PagerConfig(boundary="fixed_1", policy="belady", resident_pages=1)
    pager = Pager(with_future(cfg, ["p1", "p2", "p1"]))
    pager.add(Turn("a", "user", "alpha"))
    pager.add(Turn("b", "user", "beta"))
    assert pager.resident == ["p2"]
    assert pager.access("p1") is False


def test_with_future_leaves_the_global_registry_and_the_config_alone() -> None:
    cfg = PagerConfig(boundary="fixed_1", policy="belady", resident_pages=1)
    before = POLICIES.names()
    bound = with_future(cfg, ["p1"])
    assert bound == cfg and cfg.policies is None and bound.policies is not None
    assert POLICIES.names() == before
    with pytest.raises(ValueError, match="future"):
        Pager(cfg)  # belady still needs its future when none is bound


def _turns(n: int) -> list[Turn]:
    return [Turn(f"t{i}", "user" if i % 2 == 0 else "assistant",
                 f"Turn {i} talks about topic{i % 7} and place{i % 5}.") for i in range(n)]


def test_replayed_spans_make_the_same_pages() -> None:
    cfg = PagerConfig(boundary="fixed_4", resident_pages=2)
    turns = _turns(30)
    spans = paginate(turns, get_boundary(cfg.boundary))
    plain, replayed = Pager(cfg), simulation_pager(cfg, spans=spans)
    for t in turns:
        assert plain.add(t) == replayed.add(t)
    assert plain.close_open_page() == replayed.close_open_page()
    assert [p.text for p in plain.pages] == [p.text for p in replayed.pages]
    assert plain.resident == replayed.resident
    assert [plain.bookmark(p.id) for p in plain.pages] == \
        [replayed.bookmark(p.id) for p in replayed.pages]


def test_deferred_bookmarks_are_made_at_the_end() -> None:
    cfg = PagerConfig(boundary="fixed_4", resident_pages=10**6)  # no eviction, no refresh
    turns = _turns(30)
    plain, deferred = Pager(cfg), simulation_pager(cfg, defer_bookmarks=True)
    assert plain.defer_bookmarks is False and deferred.defer_bookmarks is True
    for t in turns:
        plain.add(t)
        deferred.add(t)
    plain.close_open_page()
    deferred.close_open_page()
    assert all(deferred.bookmark(p.id).keywords == () for p in deferred.pages)
    assert all(plain.bookmark(p.id).keywords for p in plain.pages)
    deferred.refresh_all_bookmarks()
    assert all(deferred.bookmark(p.id).keywords for p in deferred.pages)
