"""The contrast extractor: registered, askability cues, routing on fixture and sample data."""

from __future__ import annotations

import pytest
from kw_fixture import conversation, locomo_sample, make_page

from copage.core.keywords import Corpus, get_extractor
from copage.core.keywords.common_words import COMMON_WORDS
from copage.core.keywords.contrast import ContrastExtractor, word_cues

SYNTH = [
    # A planted fact inside filler, as in the synthetic suite (and in real assistant chats):
    # the user states it, the assistant repeats it back; the filler is advice.
    make_page(0, [
        "How do I write a cover letter that does not sound generic?",
        "Open with why this team, mention one concrete thing, keep it under three hundred words.",
        "I've got pickup soccer every Monday at 6 pm, so that slot is always taken.",
        "Noted. A fixed pickup soccer slot on Monday is a nice anchor for the week.",
        "What questions should I ask at the end of an interview?",
        "Ask what success looks like and how the team handles disagreements.",
    ]),
    make_page(1, [
        "I feel swamped lately, honestly it has been a crazy week.",
        "Sorry to hear that. What has kept you busy?",
        "My daughter started a pottery class and I drive her to the pottery studio.",
        "A pottery class sounds fun. Does she like the studio?",
    ]),
]


def test_registered_with_options() -> None:
    ex = get_extractor("contrast", alpha0=500.0, penalty=0.5)
    assert isinstance(ex, ContrastExtractor) and ex.alpha0 == 500.0 and ex.penalty == 0.5
    with pytest.raises(ValueError, match="valid options: alpha0, penalty"):
        get_extractor("contrast", weight=1)


def test_word_cues() -> None:
    cues = word_cues(SYNTH[1])
    assert cues["pottery"] > cues["swamped"]  # a thing both speakers name vs an aside
    assert cues["class"] > 0 and cues["studio"] > 0
    assert word_cues(SYNTH[0])["questions"] < 0  # said only in a question
    assert "swamped" in COMMON_WORDS and "pottery" not in COMMON_WORDS


def test_keywords_name_what_is_asked_about() -> None:
    kws = get_extractor("contrast").extract_all(SYNTH, 3)
    fact = {"pickup soccer", "pickup", "soccer", "monday", "slot", "6 pm"}
    assert len(fact & {k.lower() for k in kws["p1"]}) >= 2, kws
    assert not {"questions", "ask", "sound", "generic"} & {k.lower() for k in kws["p1"]}, kws
    assert "pottery" in [k.lower() for k in kws["p2"]] or "pottery class" in kws["p2"], kws
    assert not {"swamped", "lately", "crazy"} & {k.lower() for k in kws["p2"]}, kws


def test_tells_fixture_pages_apart() -> None:
    from test_keywords_discriminative import turn_query_credit

    pages = conversation()
    credit = turn_query_credit(pages, get_extractor("contrast").extract_all(pages, 4))
    assert credit >= 0.85, credit


def test_live_equals_batch_when_the_corpus_is_complete() -> None:
    pages = conversation()
    corpus = Corpus.from_pages(pages)
    ex = get_extractor("contrast")
    batch = ex.extract_all(pages, 4)
    assert ex.extract(pages[0], corpus, 4) == batch["p1"]


def _routing(extractor: str, data: str, seeds: list[int], ids: tuple[str, ...] = ()) -> float:
    from dataclasses import replace

    from copage.eval.datasets import load_dataset
    from copage.eval.simulation import Cell, run_conversation

    credits: list[float] = []
    for seed in seeds:
        ds = load_dataset(data, seed=seed)
        convs = [c for c in ds.conversations if not ids or c.id in ids]
        ds = replace(ds, conversations=tuple(convs))
        cell = Cell("fixed_10", "lru", 5, extractor, "minimal", "end", "shuffled", seed)
        for conv in ds.conversations:
            run = run_conversation(conv, cell)
            credits += [o.routing for o in run.outcomes if o.routing is not None]
    return sum(credits) / len(credits)


def test_routes_better_than_heuristic_on_synthetic_data() -> None:
    # Seeds 0-1 were the development data; the margin on held-out seeds is in docs/keywords.md.
    contrast = _routing("contrast", "ablation", [0])
    assert contrast > _routing("heuristic", "ablation", [0]) + 0.1
    assert contrast > _routing("discriminative", "ablation", [0]) + 0.1


LOCOMO = locomo_sample()


@pytest.mark.skipif(LOCOMO is None, reason="LoCoMo sample not present (../shared)")
def test_routes_better_than_heuristic_on_the_locomo_sample() -> None:
    assert _routing("contrast", str(LOCOMO), [0]) > 1.5 * _routing("heuristic", str(LOCOMO), [0])
