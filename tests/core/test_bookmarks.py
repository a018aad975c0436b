"""Bookmark formats: exact minimal rendering, field extraction, ordered token costs."""

from __future__ import annotations

import pytest
from kw_fixture import conversation, make_page

from copage.core.bookmarks import FORMATS, get_format, make_bookmark
from copage.core.keywords import get_extractor
from copage.core.registry import UnknownNameError
from copage.core.tokens import EstimateTokenizer, default_tokenizer

NAMES = ["gist", "minimal", "snippet", "structured"]
PAGE = make_page(
    2,
    [
        "Dr. Lee moved my appointment to May 8. It costs $450.",
        "Got it: May 8 with Dr. Lee in Lisbon, $450.",
    ],
)


def test_registry_and_unknown_name() -> None:
    assert sorted(FORMATS.names()) == NAMES
    with pytest.raises(UnknownNameError, match="minimal, snippet, structured"):
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
        "[p3 people: Anna, Ben, Dr. Lee; places: Lisbon; dates: May 8; amounts: $450; "
        "topics: appointment]"
    )


@pytest.mark.parametrize("name", NAMES)
def test_empty_page(name: str) -> None:
    empty = make_page(0, [])
    bm = make_bookmark(empty, (), get_format(name), default_tokenizer())
    assert bm.text.startswith("[p1") and bm.text.endswith("]")


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
