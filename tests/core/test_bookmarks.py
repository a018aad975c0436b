"""Bookmark formats: exact minimal rendering, field extraction, ordered token costs."""

from __future__ import annotations

import functools
from dataclasses import replace

import pytest
from kw_fixture import (
    NAMES_OTHER,
    NAMES_PEOPLE,
    blob_pages,
    conversation,
    locomo_sample,
    make_page,
    names_page,
)

from copage.core.bookmarks import FORMATS, get_format, make_bookmark
from copage.core.bookmarks.fields import people_and_names
from copage.core.keywords import EXTRACTORS, get_extractor
from copage.core.keywords.limits import MAX_KEYWORD_CHARS
from copage.core.registry import UnknownNameError
from copage.core.tokens import EstimateTokenizer, default_tokenizer
from copage.core.types import Page, page_id, render_turns

NAMES = ["compact", "gist", "minimal", "snippet", "structured"]
PAGE = make_page(
    2,
    [
        "Dr. Lee moved my appointment to May 8. It costs $450.",
        "Got it: May 8 with Dr. Lee in Lisbon, $450.",
    ],
)


def test_registry_and_unknown_name() -> None:
    assert sorted(FORMATS.names()) == NAMES
    with pytest.raises(UnknownNameError, match="compact, gist, minimal, snippet, structured"):
        get_format("fancy")
    with pytest.raises(ValueError, match="valid options: max_words"):
        get_format("snippet", words=3)


def test_minimal_is_exact() -> None:
    fmt = get_format("minimal")
    assert fmt.render(PAGE, ("kw1", "kw2", "kw3")) == "[p3:kw1, kw2, kw3]"
    assert fmt.render(PAGE, ()) == "[p3:]"


def test_snippet_and_gist_shapes() -> None:
    snippet = get_format("snippet").render(PAGE, ("Lisbon",))
    assert snippet == '[p3:Lisbon | "Got it: May 8 with Dr. Lee in Lisbon, $450."]'
    short = get_format("snippet", max_words=3).render(PAGE, ("Lisbon",))
    assert short == '[p3:Lisbon | "Got it: May ..."]'
    gist = get_format("gist").render(PAGE, ("appointment", "Lisbon"))
    assert gist.startswith('[p3:appointment, Lisbon \u2014 gist: "Dr. Lee moved')
    assert gist.endswith('"]')


def test_structured_fields() -> None:
    text = get_format("structured").render(PAGE, ("appointment", "$450"))
    assert text == (
        "[p3 people: Anna, Ben, Dr. Lee; dates: May 8; amounts: $450; topics: appointment, Lisbon]"
    )


def test_structured_people_are_people() -> None:
    # Defect: "people: Maria, Alfama, Fado" and "people: Snowflake" (regex guesses).
    people, others = people_and_names(names_page())
    assert set(people) == NAMES_PEOPLE
    assert set(others) == NAMES_OTHER
    text = get_format("structured").render(names_page(), ())
    assert text.startswith("[p1 people: Caroline, Melanie, Mel; topics: ")
    assert "places" not in text


def test_structured_timestamp_shows_the_date() -> None:
    page = make_page(0, ["We met at noon."])
    page = replace(page, turns=tuple(replace(t, timestamp="1:56 pm on 8 May, 2023")
                                     for t in page.turns))
    assert "dates: 8 May, 2023" in get_format("structured").render(page, ())


LOCOMO = locomo_sample()
# The LoCoMo sample's people (speakers, nicknames, people they mention) and its other names.
LOCOMO_PEOPLE = {"Caroline", "Melanie", "Mel", "Mell", "Caro", "Jon", "Gina", "Matt Patterson",
                 "Sara Bareilles", "Amy Ellis Nutt", "Bach", "Mozart", "Ed Sheeran",
                 "Shia Labeouf"}
LOCOMO_NOT_PEOPLE = {"Sweden", "Rome", "Paris", "Grand Canyon", "Door Dash", "Pride", "TikTok",
                     "Oliver", "Oscar", "Bailey", "Marley", "LGBTQ", "Perseid", "Fri", "Now",
                     "Here's", "Lately", "I'd", "Bye Jon", "Congrats Caroline", "BTW", "FYI"}


@pytest.mark.skipif(LOCOMO is None, reason="LoCoMo sample not present (../shared)")
def test_structured_people_on_the_locomo_sample() -> None:
    from copage.eval.datasets import load_dataset

    people: set[str] = set()
    others: set[str] = set()
    speakers: set[str] = set()
    for conv in load_dataset(str(LOCOMO)).conversations:
        for i in range(0, len(conv.turns), 10):
            turns = tuple(conv.turns[i : i + 10])
            page = Page(page_id(i // 10), i // 10, turns, render_turns(turns), 0)
            found, rest = people_and_names(page)
            people |= set(found)
            others |= set(rest)
            speakers |= {t.speaker for t in turns if t.speaker}
            text = get_format("structured").render(page, ())
            assert set(text.split("people: ", 1)[1].split(";")[0].split(", ")) >= {
                t.speaker for t in turns if t.speaker
            } or len({t.speaker for t in turns}) > 3
    assert people <= LOCOMO_PEOPLE, people - LOCOMO_PEOPLE
    assert speakers <= people
    assert {"Matt Patterson", "Sara Bareilles", "Amy Ellis Nutt"} <= people
    assert not (people & LOCOMO_NOT_PEOPLE)
    assert {"Sweden", "Rome", "Paris", "Grand Canyon", "Door Dash"} <= others
    assert not (others & {"Fri", "Now", "Here's", "Lately", "I'd", "Bye Jon", "BTW"})


@functools.cache
def blob_keywords() -> tuple[list[Page], dict[str, dict[str, tuple[str, ...]]]]:
    pages = conversation() + blob_pages()
    return pages, {e: get_extractor(e).extract_all(pages, 4) for e in EXTRACTORS.names()}


@pytest.mark.parametrize("name", NAMES)
def test_bookmarks_of_pasted_blobs_stay_small(name: str) -> None:
    # Defect: a hex blob gave a minimal bookmark of 2,261 tokens, a 200k-character turn 25,004.
    pages, by_extractor = blob_keywords()
    tok = default_tokenizer()
    bound = {"minimal": 40, "compact": 40, "snippet": 70, "structured": 70, "gist": 120}[name]
    for extractor, kws in by_extractor.items():
        for page in pages[-4:]:
            assert all(len(k) <= MAX_KEYWORD_CHARS for k in kws[page.id]), kws[page.id]
            bm = make_bookmark(page, kws[page.id], get_format(name), tok)
            assert bm.tokens <= bound, (extractor, page.id, bm.tokens, bm.text[:200])


def test_make_bookmark_bounds_any_keywords() -> None:
    # Extractors outside the package (LLM ones) are bounded too.
    blob = "ab" * 5000
    bm = make_bookmark(PAGE, [blob, "Project Hail Mary", "one two three four five six"],
                       get_format("minimal"), default_tokenizer())
    assert bm.keywords == (blob[:12] + "\u2026", "Project Hail Mary", "one two three four")
    assert bm.tokens < 30


@pytest.mark.parametrize("name", NAMES)
def test_empty_page(name: str) -> None:
    empty = make_page(0, [])
    bm = make_bookmark(empty, (), get_format(name), default_tokenizer())
    assert bm.text.startswith("[p1") and bm.text.endswith("]")


def test_compact_is_exact_and_cheaper_per_word() -> None:
    fmt = get_format("compact")
    assert fmt.render(PAGE, ("peanut allergy", "Thai restaurant")) == (
        "[p3: peanut allergy Thai restaurant]")
    assert fmt.render(PAGE, ()) == "[p3]"
    tok = default_tokenizer()
    words = ("library", "mom", "museum", "eyes")
    # A comma is a token of its own: the same four words cost 3 tokens less compact.
    assert tok.count(fmt.render(PAGE, words)) + 3 == tok.count(
        get_format("minimal").render(PAGE, words))


def test_the_token_cap_packs_keywords_in_rank_order() -> None:
    tok = default_tokenizer()
    fmt = get_format("compact")
    ranked = ["Lisbon", "dentist", "Dr Okafor", "appointment", "dentist appointment",
              "insurance card", "October", "budget", "euros", "trip", "flight", "hotel"]
    bm = make_bookmark(PAGE, ranked, fmt, tok, 12)
    assert bm.tokens <= 12 and bm.tokens == tok.count(bm.text)
    # Rank order kept; "dentist appointment" adds no word once both are shown.
    assert bm.keywords[:4] == ("Lisbon", "dentist", "Dr Okafor", "appointment")
    assert "dentist appointment" not in bm.keywords
    # Whatever does not fit is skipped, and a later, shorter one may still fit.
    every = make_bookmark(PAGE, ranked, fmt, tok)
    assert every.keywords == tuple(ranked) and every.tokens > 12
    assert set(bm.keywords) < set(every.keywords)
    # The first keyword alone over the cap: shown alone rather than an empty bookmark.
    long = make_bookmark(PAGE, ["Mount Kilimanjaro expedition permit"], fmt, tok, 5)
    assert long.keywords == ("Mount Kilimanjaro expedition permit",)
    assert make_bookmark(PAGE, ["Mount Kilimanjaro expedition permit", "x"], fmt, tok,
                         5).keywords == ("x",)
    # The cap holds for every format that fits it at all.
    minimal = make_bookmark(PAGE, ranked, get_format("minimal"), tok, 12)
    assert minimal.tokens <= 12 and len(minimal.keywords) < len(bm.keywords)


@pytest.mark.parametrize("name", ["snippet", "structured", "gist"])
def test_the_cap_counts_the_keyword_list_of_richer_formats(name: str) -> None:
    # Defect: with the default cap of 12 a gist or a snippet (50+ tokens by itself)
    # kept one keyword; the cap counts their keyword list, the sentence comes on top.
    tok = default_tokenizer()
    ranked = ["Lisbon", "dentist", "Dr Okafor", "appointment", "insurance card", "October"]
    capped = make_bookmark(PAGE, ranked, get_format(name), tok, 12)
    as_minimal = make_bookmark(PAGE, ranked, get_format("minimal"), tok, 12)
    assert capped.keywords == as_minimal.keywords and len(capped.keywords) >= 3
    assert capped.tokens > 12  # the format's own part is not cut


def test_make_bookmark_counts_tokens() -> None:
    tok = EstimateTokenizer()
    bm = make_bookmark(PAGE, ["a", "b"], get_format("minimal"), tok)
    assert (bm.page_id, bm.keywords, bm.text, bm.format) == (
        "p3",
        ("a", "b"),
        "[p3:a, b]",
        "minimal",
    )
    assert bm.tokens == tok.count("[p3:a, b]")
    with pytest.raises(TypeError):
        make_bookmark(PAGE, "ab", get_format("minimal"), tok)


def test_token_costs_are_ordered_and_in_range() -> None:
    pages = conversation()
    kws = get_extractor("heuristic").extract_all(pages, 4)
    tok = default_tokenizer()
    mean = {
        name: sum(make_bookmark(p, kws[p.id], get_format(name), tok).tokens for p in pages)
        / len(pages)
        for name in NAMES
    }
    assert mean["minimal"] < mean["snippet"] < mean["gist"], mean
    assert mean["minimal"] < mean["structured"] < mean["gist"], mean
    costs = {
        n: [make_bookmark(p, kws[p.id], get_format(n), tok).tokens for p in pages] for n in NAMES
    }
    assert all(4 <= c <= 30 for c in costs["minimal"]), costs
    assert all(c <= 95 for c in costs["gist"]), costs
    assert mean["gist"] >= 2.5 * mean["minimal"], mean
