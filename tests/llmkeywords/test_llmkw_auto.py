"""``auto``: the TF-IDF mass selection rule, and the mass itself."""

from __future__ import annotations

import math

import pytest

from copage.core.keywords import Corpus
from copage.core.types import Page, page_id
from copage.eval.llmkeywords import AutoGenerator, heuristic_mass, llm_extractor, page_mass
from copage.llm import ScriptedModel

TEXTS = [
    "Anna: I have a severe peanut allergy, so Thai Garden is out.\nBot: Noted, no peanuts.",
    "Anna: My budget for the Lisbon trip is $450 total.\nBot: $450 for Lisbon, got it.",
    "Anna: Dr. Okafor moved my appointment to Friday.\nBot: Friday with Dr. Okafor, noted.",
]
BATCH_REPLY = '{"p1": ["b1"], "p2": ["b2"], "p3": ["b3"]}'
HYBRID_REPLY = '{"p1": "h1", "p2": "h2", "p3": "h3"}'


def make_pages(texts: list[str] = TEXTS) -> list[Page]:
    return [Page(page_id(i), i, (), t, 0) for i, t in enumerate(texts)]


def test_page_mass_by_hand() -> None:
    # Two pages; page 1 terms: apple x2 (df 1), pear x1 (df 2). N = 2.
    pages = make_pages(["apple apple pear", "pear plum"])
    corpus = Corpus.from_pages(pages)
    idf1 = math.log(3 / 2) + 1  # df = 1
    idf2 = math.log(3 / 3) + 1  # df = 2
    w_apple, w_pear = 2 * idf1, 1 * idf2
    assert page_mass(pages[0], corpus, ["apple"]) == pytest.approx(1.0)
    assert page_mass(pages[0], corpus, ["pear"]) == pytest.approx(w_pear / w_apple)
    assert page_mass(pages[0], corpus, ["Pear", "apple"]) == pytest.approx(1.0)
    assert page_mass(pages[0], corpus, ["banana"]) == 0.0
    assert page_mass(make_pages(["the of"])[0], Corpus.from_pages(make_pages(["the of"])),
                     ["x"]) is None


def test_heuristic_mass_is_a_mean_in_unit_interval() -> None:
    value = heuristic_mass(make_pages(), 4)
    assert 0.0 < value <= 1.0
    assert heuristic_mass([], 4) == 0.0


@pytest.mark.parametrize(("delta", "expect"), [(0.0, "hybrid"), (1e-9, "llm-batch"),
                                               (-0.2, "hybrid"), (0.2, "llm-batch")])
def test_auto_switches_at_the_threshold(delta: float, expect: str) -> None:
    pages = make_pages()
    mass = heuristic_mass(pages, 3)
    model = ScriptedModel().reply(HYBRID_REPLY if expect == "hybrid" else BATCH_REPLY)
    gen = llm_extractor("auto", model, threshold=mass + delta)
    assert isinstance(gen, AutoGenerator)
    got = gen.extract_all(pages, 3)
    assert gen.last_choice == expect
    assert gen.last_mass == pytest.approx(mass)
    prompt = str(model.requests[0].messages[-1]["content"])
    if expect == "hybrid":
        assert "exactly ONE new keyword" in prompt and got["p1"][-1] == "h1"
    else:
        assert "no keyword may appear" in prompt and got["p1"] == ("b1",)


def test_auto_live_uses_running_mass() -> None:
    pages = make_pages()
    corpus = Corpus.from_pages(pages)
    gen = llm_extractor("auto", ScriptedModel().reply('["x"]'), threshold=2.0)
    assert isinstance(gen, AutoGenerator)
    assert gen.extract(pages[0], corpus, 3) == ("x",)
    assert gen.last_choice == "llm-batch" and gen.last_mass is not None


def test_auto_bad_threshold() -> None:
    with pytest.raises(ValueError, match="threshold"):
        llm_extractor("auto", ScriptedModel(), threshold="high")
    with pytest.raises(ValueError, match="threshold"):
        llm_extractor("auto", ScriptedModel(), threshold=float("nan"))


def test_choose_threshold_gap_midpoint_and_overlap_fallback() -> None:
    from copage.eval.llmkeywords.calibrate import choose_threshold

    assert choose_threshold([0.7, 0.9], [0.4, 0.5]) == pytest.approx(0.6)
    assert choose_threshold([0.5, 0.9], [0.6, 0.2]) == pytest.approx((0.7 + 0.4) / 2)
    with pytest.raises(ValueError, match="both groups"):
        choose_threshold([], [0.1])


def test_default_threshold_matches_the_documented_calibration() -> None:
    from copage.eval.datasets import load_dataset
    from copage.eval.llmkeywords import DEFAULT_THRESHOLD
    from copage.eval.llmkeywords.calibrate import choose_threshold, conversation_pages

    high = [heuristic_mass(conversation_pages(c.turns), 4)
            for c in load_dataset("controlled", seed=0).conversations]
    path = "/work/shared/data/locomo/locomo-sample.json"
    try:
        locomo = load_dataset(path)
    except Exception:  # noqa: BLE001
        pytest.skip("LoCoMo sample not available")
    conv = next(c for c in locomo.conversations if c.id == "conv-26")
    low = [heuristic_mass(conversation_pages(conv.turns), 4)]
    assert choose_threshold(high, low) == pytest.approx(DEFAULT_THRESHOLD, abs=5e-4)
