"""The discriminative extractor: Fightin' Words scores, taken penalty, distinguishability."""

from __future__ import annotations

import math

import pytest
from kw_fixture import conversation, make_page

from copage.core.keywords import Corpus, get_extractor
from copage.core.keywords.discriminative import DiscriminativeExtractor, fightin_words_z
from copage.core.retrieval import BM25Index, rank_top1_credit
from copage.core.text import content_words
from copage.core.types import Page


def turn_query_credit(pages: list[Page], keywords: dict[str, tuple[str, ...]]) -> float:
    """Mean top-1 credit when each turn of each page queries BM25 over the bookmarks."""
    index = BM25Index([content_words(" ".join(keywords[p.id])) for p in pages])
    credits = [
        rank_top1_credit(index.scores(q), {i})
        for i, page in enumerate(pages)
        for turn in page.turns
        if (q := content_words(turn.text))
    ]
    return sum(credits) / len(credits)


def test_bookmarks_tell_pages_apart_better_than_heuristic_and_tfidf() -> None:
    pages = conversation()
    credit = {
        name: turn_query_credit(pages, get_extractor(name).extract_all(pages, 4))
        for name in ["heuristic", "tfidf", "discriminative"]
    }
    assert credit["discriminative"] > credit["tfidf"] > credit["heuristic"], credit
    assert credit["discriminative"] >= 0.9, credit


def test_generic_shared_words_are_avoided() -> None:
    kws = get_extractor("discriminative").extract_all(conversation(), 4)
    flat = [k.lower() for page in kws.values() for k in page]
    assert "medical" not in flat and "budget" not in flat
    assert "wedding" in kws["p1"] and "ThinkPad" in kws["p2"] and "root canal" in kws["p3"]


def test_fightin_words_matches_formula_by_hand() -> None:
    # Monroe et al. (2008) eq. 16 and 18 evaluated directly.
    y_p, n_p, y_r, n_r, a_w, a0 = 3, 50, 1, 200, 0.4, 25.0
    delta = math.log((y_p + a_w) / (n_p + a0 - y_p - a_w)) - math.log(
        (y_r + a_w) / (n_r + a0 - y_r - a_w)
    )
    expected = delta / math.sqrt(1 / (y_p + a_w) + 1 / (y_r + a_w))
    assert fightin_words_z(y_p, n_p, y_r, n_r, a_w, a0) == pytest.approx(expected, rel=1e-12)
    assert fightin_words_z(0, 50, 5, 200, 0.4, 25.0) < 0 < expected


def test_taken_penalty_changes_the_choice() -> None:
    pages = conversation()
    corpus = Corpus.from_pages(pages)
    ex = get_extractor("discriminative")
    free = ex.extract(pages[0], corpus, 2)
    taken = {free[0].lower(): 3}
    penalised = ex.extract(pages[0], corpus, 2, taken=taken)
    assert free[0] not in penalised and penalised != free
    no_penalty = get_extractor("discriminative", penalty=0.0)
    assert no_penalty.extract(pages[0], corpus, 2, taken=taken) == free


def test_no_phrase_together_with_its_words_and_capitalised_display() -> None:
    page = make_page(
        0,
        [
            "We ate at Thai Garden in Lisbon, and Thai Garden had the best curry.",
            "Thai Garden curry again next week?",
        ],
    )
    other = make_page(1, ["We cooked pasta at home and watched a film about a garden."])
    kws = get_extractor("discriminative").extract_all([page, other], 4)["p1"]
    assert "Thai Garden" in kws
    words = [w.lower() for k in kws for w in k.split()]
    assert len(words) == len(set(words)), kws


def test_extract_all_penalises_earlier_choices() -> None:
    pages = [make_page(i, ["pottery class pottery class on weekends"]) for i in range(2)]
    kws = DiscriminativeExtractor().extract_all(pages, 1)
    assert kws["p1"] != kws["p2"]


def test_bad_options_are_clear() -> None:
    with pytest.raises(ValueError, match="alpha0"):
        get_extractor("discriminative", alpha0=0)
    with pytest.raises(ValueError, match="valid options: alpha0, penalty"):
        get_extractor("discriminative", beta=1)


NAME_PAGES = [
    make_page(8, ["This spring I planted San Marzano tomatoes.", "Nice, how are they doing?",
                  "I also planted San Marzano seeds indoors.", "Good luck with them."]),
    make_page(9, ["Last night we watched Project Hail Mary.", "Did you like it?",
                  "We watched Project Hail Mary twice.", "Great."]),
]


def test_a_phrase_is_a_name_only_if_all_its_words_are() -> None:
    # Defect: "planted San" + "Marzano", "watched Project" + "Hail" + "Mary".
    kws = get_extractor("discriminative").extract_all(conversation() + NAME_PAGES, 4)
    assert "San Marzano" in kws["p9"], kws["p9"]
    assert "Project Hail Mary" in kws["p10"], kws["p10"]
    for page in ("p9", "p10"):
        for kw in kws[page]:
            words = kw.split(" ")
            assert len({w[:1].isupper() for w in words}) == 1, kws[page]  # no mixed phrase
        flat = [w.lower() for kw in kws[page] for w in kw.split(" ")]
        assert len(flat) == len(set(flat)), kws[page]  # no name split over two keywords


def test_page_names_marks_mixed_phrases_and_whole_names() -> None:
    from copage.core.keywords.names import page_names

    named = page_names("I planted San Marzano tomatoes. We watched Project Hail Mary.")
    assert {"planted san", "marzano tomatoes", "watched project"} <= named.mixed
    assert "san marzano" not in named.mixed and "hail mary" not in named.mixed
    assert named.whole["hail"] == named.whole["project hail"] == "Project Hail Mary"
    assert named.whole["marzano"] == "San Marzano"
