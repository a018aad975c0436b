"""Keyword extractors: registry, determinism, heuristic surface features, tfidf, corpus."""

from __future__ import annotations

import pytest
from kw_fixture import conversation, make_page

from copage.core.keywords import DEFAULT_N_KEYWORDS, EXTRACTORS, Corpus, get_extractor
from copage.core.keywords.heuristic import HEURISTIC_STOPWORDS
from copage.core.keywords.terms import body, display_forms, term_counts
from copage.core.registry import UnknownNameError

NAMES = ["random", "heuristic", "tfidf", "discriminative", "generic", "contrast", "askable"]

CRAFTED = make_page(
    0,
    [
        "Hey, can you book a table for us? The Thai Garden has a tasting menu for $450.",
        "Sure. Thai Garden is free on May 8 at 7pm. Should I book it?",
        "Yes, book Thai Garden for May 8 please, the $450 menu for six people.",
        "Done: Thai Garden, May 8, $450 in total.",
    ],
)


def test_registry_names_and_unknown_name() -> None:
    assert sorted(EXTRACTORS.names()) == sorted(NAMES)
    with pytest.raises(UnknownNameError) as err:
        get_extractor("nope")
    for name in NAMES:
        assert name in str(err.value)


def test_unknown_option_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="valid options: seed"):
        get_extractor("random", sed=1)


@pytest.mark.parametrize("name", NAMES)
def test_deterministic_and_n_respected(name: str) -> None:
    pages = conversation()
    first = get_extractor(name).extract_all(pages, 3)
    again = get_extractor(name).extract_all(pages, 3)
    assert first == again
    assert all(len(kws) == 3 for kws in first.values())
    assert all(len({k.lower() for k in kws}) == 3 for kws in first.values())
    six = get_extractor(name).extract_all(pages, 6)
    assert all(len(kws) == 6 for kws in six.values())
    assert DEFAULT_N_KEYWORDS == 4


@pytest.mark.parametrize("name", NAMES)
def test_empty_page_and_bad_n(name: str) -> None:
    empty = make_page(0, [])
    ex = get_extractor(name)
    assert ex.extract(empty, Corpus(), 4) == ()
    assert ex.extract_all([empty], 4) == {"p1": ()}
    assert ex.extract(CRAFTED, Corpus(), 0) == ()
    with pytest.raises(ValueError, match="non-negative integer"):
        ex.extract(CRAFTED, Corpus(), -1)


def test_random_seed_changes_choice_and_is_stable_across_runs() -> None:
    pages = conversation()
    a = get_extractor("random", seed=0).extract_all(pages, 4)
    b = get_extractor("random", seed=1).extract_all(pages, 4)
    assert a != b
    # A fixed expectation: the stable hash (blake2b) makes this hold in every process.
    assert a["p1"] == get_extractor("random").extract(pages[0], Corpus(), 4)
    words = set(term_counts(pages[0].text))
    assert all(k in words for k in a["p1"])


def test_heuristic_stopwords_are_sixty() -> None:
    assert len(HEURISTIC_STOPWORDS) == 60
    assert {"the", "i", "hey", "wow", "yeah", "thanks"} <= HEURISTIC_STOPWORDS


def test_heuristic_finds_amount_phrase_and_date() -> None:
    kws = get_extractor("heuristic").extract(CRAFTED, Corpus(), 4)
    assert {"$450", "Thai Garden", "May 8"} <= set(kws)
    assert not {"Hey", "Sure", "Yes", "Done"} & set(kws)


def test_heuristic_dates_and_fallback() -> None:
    page = make_page(0, ["we moved it from 2023-05-08 to 8 May 2023, then March 3rd, on Friday"])
    kws = get_extractor("heuristic").extract(page, Corpus(), 4)
    assert set(kws) == {"2023-05-08", "8 May 2023", "March 3rd", "Friday"}
    plain = make_page(0, ["the garden party needs garden chairs and lemonade"])
    assert get_extractor("heuristic").extract(plain, Corpus(), 2) == ("garden", "party")


def test_tfidf_prefers_terms_rare_in_other_pages() -> None:
    pages = [
        make_page(0, ["budget for the wedding"]),
        make_page(1, ["budget for the laptop"]),
        make_page(2, ["budget for groceries"]),
    ]
    kws = get_extractor("tfidf").extract_all(pages, 1)
    assert kws == {"p1": ("wedding",), "p2": ("laptop",), "p3": ("groceries",)}
    # Alone, the page's most frequent word wins.
    assert get_extractor("tfidf").extract(pages[0], Corpus(), 1) == ("budget",)


def test_live_corpus_without_the_page_matches_batch() -> None:
    pages = conversation()
    corpus = Corpus.from_pages(pages[:-1])
    for name in ["tfidf", "discriminative"]:
        ex = get_extractor(name)
        live = ex.extract(pages[-1], corpus, 4)
        batch = ex.extract(pages[-1], Corpus.from_pages(pages), 4)
        assert live == batch


def test_corpus_counts_and_duplicates() -> None:
    corpus = Corpus()
    corpus.add("p1", "Anna: Thai Garden tonight?\nBen: Thai Garden, yes.")
    corpus.add("p2", "Anna: the garden")
    assert corpus.n_pages == len(corpus) == 2
    assert corpus.df("garden") == 2 and corpus.cf("garden") == 3
    assert corpus.tf("p1")["thai garden"] == 2
    assert corpus.df("anna") == 0  # speaker prefixes are not content
    assert corpus.total == sum(corpus.tf("p1").values()) + sum(corpus.tf("p2").values())
    with pytest.raises(ValueError, match="already in the corpus"):
        corpus.add("p1", "again")
    with pytest.raises(KeyError, match="p9"):
        corpus.tf("p9")


def test_terms_display_forms_and_body() -> None:
    text = body("(session 2, 8 May 2023)\nAnna: Taking the train to Lisbon. It costs $450.")
    assert "session" not in text and "Anna" not in text
    forms = display_forms(text)
    assert forms["lisbon"] == "Lisbon" and forms["taking"] == "taking"
    assert forms["450"] == "$450"


def test_keyword_bounds() -> None:
    from copage.core.keywords.limits import (
        MAX_KEYWORD_CHARS,
        bound_keyword,
        bounded,
        clip_word,
    )

    assert clip_word("a" * 24) == "a" * 24
    assert clip_word("0123456789abcdef" * 3) == "0123456789ab\u2026"
    assert bound_keyword("Project Hail Mary") == "Project Hail Mary"
    assert bound_keyword("one two three four five") == "one two three four"
    long = bound_keyword("abcdefghijklmnopqrst " * 4)
    assert len(long) <= MAX_KEYWORD_CHARS and long.startswith("abcdefghijklmnopqrst")
    assert bounded(["x" * 100, "x" * 90, "Lisbon"]) == ("xxxxxxxxxxxx\u2026", "Lisbon")


@pytest.mark.parametrize("name", NAMES)
def test_extractors_bound_their_keywords(name: str) -> None:
    from kw_fixture import blob_pages

    from copage.core.keywords.limits import MAX_KEYWORD_CHARS

    pages = blob_pages()[:1] + blob_pages()[3:]  # the hex blob and the huge numbers
    for kws in get_extractor(name).extract_all(pages, 4).values():
        assert all(len(k) <= MAX_KEYWORD_CHARS for k in kws), kws
