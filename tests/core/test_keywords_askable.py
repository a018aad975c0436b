"""``askable``: contrast plus fitted feature weights; the per-term features it reads."""

from __future__ import annotations

import math

import pytest
from kw_fixture import conversation, locomo_sample, make_page
from test_keywords_routable import names_nothing, number_chat

from copage import PagedMemory
from copage.core.keywords import Corpus, get_extractor
from copage.core.keywords.askable import AskableExtractor
from copage.core.keywords.askable_weights import ASKABLE_WEIGHTS
from copage.core.keywords.features import (
    FEATURES,
    term_static,
    word_features,
    word_stats,
)
from copage.core.types import Page, Turn, page_id, render_turns


def _page(index: int, lines: list[tuple[str, str]]) -> Page:
    turns = tuple(Turn(id=f"t{index}-{i}", role="user", speaker=who, text=text)
                  for i, (who, text) in enumerate(lines))
    text = render_turns(turns)
    return Page(page_id(index), index, turns, text, len(text) // 4)


POTTERY = _page(0, [
    ("Ana", "My daughter started a pottery class. I drive her to the pottery studio."),
    ("Ben", "A pottery class? Which studio? Sounds fun."),
    ("Ana", "I painted the walls yesterday and I quickly checked the Lisbon flights."),
])


def test_registered_and_options_come_from_the_signature() -> None:
    ex = get_extractor("askable", beta=0.5, rarity=0.5)
    assert isinstance(ex, AskableExtractor) and ex.beta == 0.5 and ex.rarity == 0.5
    assert ex.weights == ASKABLE_WEIGHTS and len(ASKABLE_WEIGHTS) == len(FEATURES)
    with pytest.raises(ValueError, match="valid options: alpha0, .*beta, weights"):
        get_extractor("askable", weight=1)


@pytest.mark.parametrize("bad", [{"beta": -1}, {"beta": math.inf}, {"weights": (1.0, 2.0)},
                                 {"weights": (math.nan,) * len(FEATURES)},
                                 {"weights": ("x",) * len(FEATURES)}, {"weights": 5}])
def test_bad_settings_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError, match="beta|weights"):
        get_extractor("askable", **bad)


def test_word_features() -> None:
    stats = word_stats(POTTERY)
    assert stats.count["pottery"] == 3 and stats.count["studio"] == 2
    assert "pottery" in stats.noun  # "a pottery class"
    assert "pottery" in stats.both_sides and "lisbon" not in stats.both_sides
    f = dict(zip(FEATURES[3:10] + FEATURES[12:], word_features(stats)["studio"], strict=True))
    assert f["in_question"] == 0.5 and f["question_only"] == 0.0  # "Which studio?"
    assert f["first_person"] == 0.5  # "I drive her to the pottery studio."
    painted = dict(zip(FEATURES[3:10] + FEATURES[12:], word_features(stats)["painted"],
                       strict=True))
    assert painted["past"] == 1.0 and painted["first_person"] == 1.0
    assert word_features(stats)["quickly"][FEATURES[12:].index("ly") + 7] == 1.0
    # "dated": the share of a word's occurrences in sentences that say when
    assert painted["dated"] == 1.0  # "I painted the walls yesterday ..."
    assert f["dated"] == 0.0 and stats.dated["lisbon"] == 1 and stats.dated["pottery"] == 0


def test_term_static_averages_the_words_of_a_phrase() -> None:
    words = word_features(word_stats(POTTERY))
    one = dict(zip(FEATURES[2:], term_static("pottery", 3, False, words), strict=True))
    assert one["log_count"] == pytest.approx(math.log(3)) and one["bigram"] == 0.0
    two = dict(zip(FEATURES[2:], term_static("pottery class", 2, True, words), strict=True))
    assert two["bigram"] == 1.0 and two["capitalised"] == 1.0
    assert two["noun"] == pytest.approx((1.0 + 0.0) / 2)  # "a pottery"; "class" follows a word
    assert two["length"] == pytest.approx((0.7 + 0.5) / 2)


def test_score_is_contrast_plus_beta_times_the_weighted_features() -> None:
    pages = conversation()
    corpus = Corpus.from_pages(pages)
    w = tuple(0.1 * (i + 1) for i in range(len(FEATURES)))
    ex = AskableExtractor(beta=2.0, weights=w)
    view = ex.view(pages[0], corpus)
    ranks = ex.rank_terms(pages[0], corpus, view)
    base = get_extractor("contrast")
    base_ranks = base.rank_terms(pages[0], corpus, base.view(pages[0], corpus))
    feats = ex.features(pages[0], corpus, view)
    for term, score in ranks.items():
        expected = base_ranks[term] + 2.0 * sum(a * b for a, b in zip(w, feats[term], strict=True))
        assert score == pytest.approx(expected, abs=1e-8), term


def test_beta_zero_is_contrast() -> None:
    pages = conversation() + [make_page(9, ["Totally different: sailing boats.", "Boats!"])]
    assert (get_extractor("askable", beta=0).extract_all(pages, 4)
            == get_extractor("contrast").extract_all(pages, 4))


def test_refresh_equals_a_fresh_extraction() -> None:
    pages = conversation()
    ex = get_extractor("askable")
    corpus = Corpus.from_pages(pages[:4])
    ex.extract(pages[0], corpus, 4)
    for page in pages[4:]:
        corpus.add(page.id, page.text)
    assert ex.extract(pages[0], corpus, 4) == get_extractor("askable").extract(
        pages[0], corpus, 4)


@pytest.mark.parametrize("seed", [0, 1])
def test_bookmarks_name_something_on_number_heavy_chat(seed: int) -> None:
    mem = PagedMemory(keywords="askable")
    for role, text in number_chat(seed):
        mem.add(role, text)
    mem.close_page()
    bookmarks = mem.bookmarks()
    for page in mem.pages:
        keywords = bookmarks[page.id].keywords
        assert keywords and not [k for k in keywords if names_nothing(k)], keywords


LOCOMO = locomo_sample()


@pytest.mark.skipif(LOCOMO is None, reason="LoCoMo sample not present (../shared)")
@pytest.mark.parametrize("name", ["contrast", "askable"])
def test_bookmarks_stay_within_the_token_cap_on_the_locomo_sample(name: str) -> None:
    # issue 17: at most 12 tokens per bookmark (o200k_base, whole minimal bookmark, mean).
    from copage.eval.datasets import load_dataset
    from copage.eval.simulation import Cell, run_conversation

    assert LOCOMO is not None
    for conv in load_dataset(str(LOCOMO), seed=0).conversations:
        run = run_conversation(conv, Cell("fixed_10", "lru", 5, name, "minimal"))
        mean = sum(run.bookmark_tokens) / len(run.bookmark_tokens)
        assert mean <= 12.0, (conv.id, mean)
