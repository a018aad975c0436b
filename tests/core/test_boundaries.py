"""Boundary strategies: registry, size-based strategies, split and incremental use."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from copage.core.boundaries import (
    BOUNDARIES,
    BoundaryParameterError,
    UnknownNameError,
    get_boundary,
    split,
    split_online,
)
from copage.core.registry import UnknownOptionError
from copage.core.types import Turn


def make_turns(n: int, session_of: list[int | None] | None = None) -> list[Turn]:
    return [
        Turn(
            id=f"t{i}",
            role="user" if i % 2 == 0 else "assistant",
            text=f"message number {i}",
            session=None if session_of is None else session_of[i],
        )
        for i in range(n)
    ]


def lengths(pages: list[list[Turn]]) -> list[int]:
    return [len(p) for p in pages]


class CharTokenizer:
    """One token per character: makes token budgets easy to reason about."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)


# --- registry -------------------------------------------------------------------


def test_names_listed() -> None:
    names = BOUNDARIES.names()
    for expected in ("fixed_N", "tokens_N", "session", "topic_shift", "segment"):
        assert expected in names


def test_unknown_name_lists_valid_names() -> None:
    with pytest.raises(UnknownNameError) as err:
        get_boundary("paragraphs")
    msg = str(err.value)
    assert "'paragraphs'" in msg
    for expected in ("fixed_N", "tokens_N", "session", "topic_shift", "segment"):
        assert expected in msg


@pytest.mark.parametrize("name", ["fixed_0", "fixed_x", "fixed_", "tokens_0", "tokens_-5"])
def test_bad_n_is_a_clear_error(name: str) -> None:
    with pytest.raises(BoundaryParameterError, match="whole number >= 1"):
        get_boundary(name)


def test_unknown_option_is_a_clear_error() -> None:
    with pytest.raises(
        UnknownOptionError,
        match="unknown option 'taget' for boundary 'segment'; valid options: target, ",
    ):
        get_boundary("segment", taget=10)


def test_tokenizer_option_accepted_everywhere() -> None:
    for name in ("fixed_5", "tokens_100", "session", "topic_shift", "segment"):
        assert get_boundary(name, tokenizer=CharTokenizer()).name == name


def test_segment_rejects_inconsistent_lengths() -> None:
    with pytest.raises(ValueError, match="min_len <= target <= max_len"):
        get_boundary("segment", target=20, min_len=30)


# --- fixed_N --------------------------------------------------------------------


@pytest.mark.parametrize(("n", "expected"), [(1, [1] * 12), (5, [5, 5, 2]), (7, [7, 5])])
def test_fixed_n(n: int, expected: list[int]) -> None:
    assert lengths(split(make_turns(12), get_boundary(f"fixed_{n}"))) == expected


def test_fixed_cuts_incremental_contract() -> None:
    f = get_boundary("fixed_5")
    turns = make_turns(7)
    assert f.cuts(turns[:4], final=False) == []
    assert f.cuts(turns[:5], final=False) == [5]
    assert f.cuts(turns[:4], final=True) == [4]
    assert f.cuts(turns, final=True) == [5, 7]


# --- tokens_N -------------------------------------------------------------------


def test_tokens_never_exceeds_budget_unless_single_turn() -> None:
    turns = [
        Turn(id=str(i), role="user", text="x" * size) for i, size in enumerate([3, 3, 3, 9, 1])
    ]
    # rendered "user: " + text costs 6 + len(text) characters
    strat = get_boundary("tokens_20", tokenizer=CharTokenizer())
    assert lengths(split(turns, strat)) == [2, 1, 1, 1]


def test_tokens_single_huge_turn_is_its_own_page() -> None:
    turns = [
        Turn(id="a", role="user", text="hi"),
        Turn(id="b", role="user", text="y" * 500),
        Turn(id="c", role="user", text="ok"),
    ]
    strat = get_boundary("tokens_30", tokenizer=CharTokenizer())
    assert lengths(split(turns, strat)) == [1, 1, 1]
    assert strat.cuts(turns[:2], final=False) == [1]


def test_tokens_default_tokenizer() -> None:
    strat = get_boundary("tokens_50")
    pages = split(make_turns(30), strat)
    assert 1 < len(pages) < 30


# --- session --------------------------------------------------------------------


def test_session_cuts_at_changes() -> None:
    turns = make_turns(9, [1, 1, 1, 2, 2, 3, 3, 3, 3])
    assert lengths(split(turns, get_boundary("session"))) == [3, 2, 4]
    assert get_boundary("session").cuts(turns[:4], final=False) == [3]


def test_session_falls_back_to_fixed_20() -> None:
    turns = make_turns(45)
    assert lengths(split(turns, get_boundary("session"))) == [20, 20, 5]


# --- split and incremental equivalence ------------------------------------------

SIZE_STRATEGIES = ["fixed_1", "fixed_5", "fixed_7", "fixed_20", "tokens_15", "tokens_60", "session"]


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(0, 70),
    name=st.sampled_from(SIZE_STRATEGIES),
    sessions=st.lists(st.integers(0, 3), min_size=70, max_size=70),
)
def test_split_covers_every_turn_and_online_matches_offline(
    n: int, name: str, sessions: list[int]
) -> None:
    session_of: list[int | None] = []
    current = 1
    for step in sessions[:n]:
        current += 1 if step == 0 else 0
        session_of.append(current)
    turns = make_turns(n, session_of)
    strat = get_boundary(name, tokenizer=CharTokenizer())
    offline = split(turns, strat)
    assert [t for p in offline for t in p] == turns
    assert all(p for p in offline)
    assert split_online(turns, strat) == offline


def topical_turns(n: int, seed: int, sessions: bool = False) -> list[Turn]:
    """Turns drawn from a few topic vocabularies, switching topic every 5-25 turns."""
    rng = random.Random(seed)
    vocab = [[f"topic{t}word{w}" for w in range(12)] for t in range(8)]
    out, topic, left, session = [], 0, 0, 1
    for i in range(n):
        if left == 0:
            topic, left = rng.randrange(8), rng.randint(5, 25)
            session += 1 if rng.random() < 0.3 else 0
        left -= 1
        text = " ".join(rng.choice(vocab[topic]) for _ in range(rng.randint(3, 12)))
        out.append(Turn(id=f"t{i}", role="user", text=text, session=session if sessions else None))
    return out


@pytest.mark.parametrize("name", ["topic_shift", "segment"])
@pytest.mark.parametrize("sessions", [False, True])
def test_content_aware_online_pages_cover_turns(name: str, sessions: bool) -> None:
    turns = topical_turns(300, seed=3, sessions=sessions)
    strat = get_boundary(name)
    for pages in (split(turns, strat), split_online(turns, strat)):
        assert [t for p in pages for t in p] == turns
        assert all(p for p in pages)


@pytest.mark.parametrize("use_sessions", [False, True])
def test_segment_pages_respect_min_and_max(use_sessions: bool) -> None:
    turns = topical_turns(400, seed=5, sessions=True)
    strat = get_boundary("segment", target=20, min_len=8, max_len=40, use_sessions=use_sessions)
    for pages in (split(turns, strat), split_online(turns, strat)):
        for i, page in enumerate(pages):
            assert len(page) <= 40
            ends_session = i + 1 < len(pages) and pages[i + 1][0].session != page[-1].session
            if i + 1 < len(pages) and not (use_sessions and ends_session):
                assert len(page) >= 8, (i, lengths(pages))
            if use_sessions:
                assert len({t.session for t in page}) == 1


def test_segment_sessions_are_forced_cuts() -> None:
    turns = topical_turns(200, seed=9, sessions=True)
    pages = split(turns, get_boundary("segment", use_sessions=True))
    ends = {sum(lengths(pages[: i + 1])) for i in range(len(pages))}
    breaks = {i for i in range(1, len(turns)) if turns[i].session != turns[i - 1].session}
    assert breaks <= ends


def test_segment_page_count_follows_target() -> None:
    turns = topical_turns(400, seed=11)
    for target in (10, 20, 40):
        pages = split(turns, get_boundary("segment", target=target, use_sessions=False))
        assert abs(len(pages) - 400 / target) <= 1


@pytest.mark.parametrize(("name", "bound"), [("topic_shift", 47), ("segment", 40)])
def test_buffer_stays_bounded(name: str, bound: int) -> None:
    """The open page (the buffer after each call) never exceeds the strategy's bound;
    for ``segment`` that is max_len, the bound of its closed pages (issue 11)."""
    turns = topical_turns(600, seed=7) + [
        Turn(id=f"same{i}", role="user", text="identical words again") for i in range(200)
    ]
    strat = get_boundary(name)
    buffer: list[Turn] = []
    biggest = 0
    for t in turns:
        buffer.append(t)
        cuts = strat.cuts(buffer, final=False)
        if cuts:
            buffer = buffer[cuts[-1] :]
        biggest = max(biggest, len(buffer))
    assert biggest <= bound


def test_topic_shift_finds_clear_topic_change() -> None:
    a = [Turn(id=f"a{i}", role="user", text="pasta sauce tomato basil garlic") for i in range(12)]
    b = [
        Turn(id=f"b{i}", role="user", text="engine brakes garage mechanic tyres") for i in range(12)
    ]
    cuts = get_boundary("topic_shift").cuts(a + b, final=True)
    assert 12 in cuts and cuts[-1] == 24
