"""Defensive parsing of keyword replies."""

from __future__ import annotations

import pytest

from copage.eval.llmkeywords.parse import (
    clean_keywords,
    load_json_lenient,
    page_key,
    parse_keyword_list,
    parse_page_keywords,
)

IDS = ["p1", "p2", "p3"]


def test_plain_json() -> None:
    got = parse_page_keywords('{"p1": ["peanut allergy", "Thai"], "p2": ["$450"]}', IDS, 4)
    assert got == {"p1": ("peanut allergy", "Thai"), "p2": ("$450",)}


def test_fenced_with_prose_trailing_commas_and_single_quotes() -> None:
    reply = "Sure! Here you go:\n```json\n{'p1': ['Lisbon', 'May 3',], 'p3': ['Dr. Okafor'],}\n```\nDone."
    assert parse_page_keywords(reply, IDS, 4) == {"p1": ("Lisbon", "May 3"), "p3": ("Dr. Okafor",)}


@pytest.mark.parametrize("key", ["p2", "P2", "page 2", "Page 2", "2", "[p2]", "page_2"])
def test_page_key_forms(key: str) -> None:
    assert page_key(key, IDS) == "p2"


@pytest.mark.parametrize("key", ["p9", "x2", "pages", "", "p2 and p3"])
def test_page_key_rejects(key: str) -> None:
    assert page_key(key, IDS) is None


def test_int_key_and_bool_key() -> None:
    assert page_key(3, IDS) == "p3"
    assert page_key(True, IDS) is None


def test_truncated_json_keeps_complete_elements_and_drops_the_cut_one() -> None:
    reply = '{"p1": ["alpha", "beta"], "p2": ["gamma", "del'
    assert parse_page_keywords(reply, IDS, 4) == {"p1": ("alpha", "beta"), "p2": ("gamma",)}
    assert parse_page_keywords('{"p1": ["alpha"], "p2": ["gam', IDS, 4) == {"p1": ("alpha",)}
    assert parse_page_keywords('{"p1": ["alpha"], "p', IDS, 4) == {"p1": ("alpha",)}
    assert parse_keyword_list('["peanut allergy", "Thai sat', 4) == ("peanut allergy",)


def test_json_followed_by_prose_with_a_brace() -> None:
    reply = '{"p1": ["Lisbon"], "p2": ["Dr. Okafor"]}\nNote: I used {page: keywords} as asked.'
    assert parse_page_keywords(reply, IDS, 4) == {"p1": ("Lisbon",), "p2": ("Dr. Okafor",)}
    assert parse_keyword_list('["a", "b"] (the [important] ones)', 4) == ("a", "b")


@pytest.mark.parametrize(
    "reply",
    [
        "p1: peanut allergy, Thai satay\np2: laptop budget, $1200",
        "- p1: peanut allergy, Thai satay\n- Page 2: laptop budget; $1200",
        "Here they are:\n**p1**: peanut allergy, Thai satay\n**P2** - laptop budget, $1200\n",
        "1. [p1]: peanut allergy, Thai satay\n2. [p2]: laptop budget, $1200",
    ],
)
def test_page_lines_without_json(reply: str) -> None:
    assert parse_page_keywords(reply, IDS, 4) == {
        "p1": ("peanut allergy", "Thai satay"), "p2": ("laptop budget", "$1200")}


@pytest.mark.parametrize(
    "reply",
    ["- peanut allergy\n- Thai satay\n- Zurich", "1. peanut allergy\n2. Thai satay\n3. Zurich",
     "Keywords: peanut allergy, Thai satay, Zurich", "* peanut allergy\n* Thai satay\n* Zurich"],
)
def test_keyword_list_without_json(reply: str) -> None:
    assert parse_keyword_list(reply, 4) == ("peanut allergy", "Thai satay", "Zurich")


def test_nested_wrapper_object() -> None:
    assert parse_page_keywords('{"pages": {"p1": ["x1"]}}', IDS, 4) == {"p1": ("x1",)}


def test_garbage_gives_nothing() -> None:
    assert parse_page_keywords("I cannot do that.", IDS, 4) == {}
    assert parse_page_keywords("[1, 2, 3]", IDS, 4) == {}
    assert parse_keyword_list("no json here", 4) is None


def test_non_list_values_are_dropped_or_split() -> None:
    got = parse_page_keywords('{"p1": 5, "p2": "a, b", "p3": {"x": 1}}', IDS, 4)
    assert got == {"p2": ("a", "b")}


def test_clean_keywords_limits_dedupes_and_skips_junk() -> None:
    assert clean_keywords(["A", "a", None, "", "B", ["c"], 7, "C", "D"], 3) == ("A", "B", "7")
    assert clean_keywords(["x" * 100], 3) is None


def test_keyword_list_forms() -> None:
    assert parse_keyword_list('["one", "two", "three"]', 2) == ("one", "two")
    assert parse_keyword_list('{"keywords": ["one"]}', 2) == ("one",)
    assert parse_keyword_list("```\n['one', 'two',]\n```", 4) == ("one", "two")


def test_lenient_loader_drops_an_unclosed_string() -> None:
    assert load_json_lenient('["abc", "de', "[") == ["abc"]
    assert load_json_lenient('["de', "[") == []
