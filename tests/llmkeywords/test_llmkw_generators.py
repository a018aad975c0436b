"""The LLM keyword generators against a scripted model."""

from __future__ import annotations

import asyncio
import json

import pytest

from copage.core.keywords import EXTRACTORS, Corpus, KeywordExtractor, get_extractor
from copage.core.registry import Registry, UnknownNameError
from copage.core.types import Page, page_id
from copage.eval.llmkeywords import (
    LLMKeywordWarning,
    llm_extractor,
    register_llm_extractors,
)
from copage.llm import ChatRequest, ScriptedModel

TEXTS = [
    "Anna: I have a severe peanut allergy, so Thai Garden is out.\nBot: Noted, no peanuts.",
    "Anna: My budget for the Lisbon trip is $450 total.\nBot: $450 for Lisbon, got it.",
    "Anna: Dr. Okafor moved my appointment to Friday.\nBot: Friday with Dr. Okafor, noted.",
]


def make_pages(texts: list[str] = TEXTS) -> list[Page]:
    return [Page(page_id(i), i, (), t, len(t.split())) for i, t in enumerate(texts)]


def user_prompt(req: ChatRequest) -> str:
    return str(req.messages[-1]["content"])


def heuristic(pages: list[Page], n: int) -> dict[str, tuple[str, ...]]:
    return get_extractor("heuristic").extract_all(pages, n)


# ---------------------------------------------------------------- llm-batch
def test_batch_good_json_one_call_with_non_overlap_constraint() -> None:
    model = ScriptedModel().reply(json.dumps(
        {"p1": ["peanut allergy", "Thai Garden"], "p2": ["Lisbon budget", "$450"],
         "p3": ["Dr. Okafor", "Friday appointment"]}))
    ext = llm_extractor("llm-batch", model)
    got = ext.extract_all(make_pages(), 2)
    assert got == {"p1": ("peanut allergy", "Thai Garden"), "p2": ("Lisbon budget", "$450"),
                   "p3": ("Dr. Okafor", "Friday appointment")}
    assert len(model.requests) == 1
    prompt = user_prompt(model.requests[0])
    assert "no keyword may appear in the list of more than one page" in prompt
    assert all(t.split("\n")[0][6:30] in prompt for t in TEXTS)
    assert model.requests[0].temperature == 0.0


def test_batch_fenced_json_and_page_key_variants() -> None:
    reply = "```json\n{'page 1': ['peanut allergy'], 'P2': ['Lisbon'], '3': ['Okafor'],}\n```"
    got = llm_extractor("llm-batch", ScriptedModel().reply(reply)).extract_all(make_pages(), 3)
    assert got == {"p1": ("peanut allergy",), "p2": ("Lisbon",), "p3": ("Okafor",)}


@pytest.mark.filterwarnings("ignore::copage.eval.llmkeywords.LLMKeywordWarning")
def test_batch_missing_and_extra_pages_fall_back_per_page() -> None:
    pages = make_pages()
    reply = '{"p1": ["peanut allergy"], "p2": 42, "p7": ["ghost"]}'
    with pytest.warns(LLMKeywordWarning, match="p2"):
        got = llm_extractor("llm-batch", ScriptedModel().reply(reply)).extract_all(pages, 3)
    base = heuristic(pages, 3)
    assert got == {"p1": ("peanut allergy",), "p2": base["p2"], "p3": base["p3"]}


def test_batch_broken_json_falls_back_everywhere() -> None:
    pages = make_pages()
    gen = llm_extractor("llm-batch", ScriptedModel().reply("{{{ not json at all"))
    with pytest.warns(LLMKeywordWarning):
        got = gen.extract_all(pages, 3)
    assert got == heuristic(pages, 3)
    assert gen.stats.fallback_pages == 3  # type: ignore[attr-defined]


@pytest.mark.filterwarnings("ignore::copage.eval.llmkeywords.LLMKeywordWarning")
def test_batch_model_exception_falls_back() -> None:
    pages = make_pages()
    model = ScriptedModel()  # empty script: complete() raises ScriptExhausted
    gen = llm_extractor("llm-batch", model)
    with pytest.warns(LLMKeywordWarning, match="model call failed"):
        got = gen.extract_all(pages, 3)
    assert got == heuristic(pages, 3)
    assert gen.stats.failed_calls == 1  # type: ignore[attr-defined]


def test_batch_enforces_non_overlap_on_the_reply() -> None:
    reply = '{"p1": ["trip", "peanuts"], "p2": ["Trip", "Lisbon"], "p3": ["trip"]}'
    got = llm_extractor("llm-batch", ScriptedModel().reply(reply)).extract_all(make_pages(), 3)
    assert got == {"p1": ("trip", "peanuts"), "p2": ("Lisbon",), "p3": ("trip",)}


def test_batch_chunks_when_pages_exceed_the_budget() -> None:
    pages = make_pages()
    model = (ScriptedModel().reply('{"p1": ["alpha"]}').reply('{"p2": ["beta"]}')
             .reply('{"p3": ["gamma", "alpha"]}'))
    gen = llm_extractor("llm-batch", model, prompt_chars=100, page_chars=80)
    assert gen.extract_all(pages, 2) == {"p1": ("alpha",), "p2": ("beta",), "p3": ("gamma",)}
    assert len(model.requests) == 3
    assert "do not reuse): alpha, beta" in user_prompt(model.requests[2])


def test_batch_live_extract_avoids_taken() -> None:
    pages = make_pages()
    model = ScriptedModel().reply('["Lisbon", "$450"]')
    got = llm_extractor("llm-batch", model).extract(
        pages[1], Corpus.from_pages(pages), 3, taken={"lisbon": 1, "unused": 0})
    assert got == ("$450",)
    assert "do not reuse): lisbon" in user_prompt(model.requests[0])


# ---------------------------------------------------------------- llm-contextual
def test_contextual_one_call_per_page_with_digests_of_the_others() -> None:
    pages = make_pages()
    model = ScriptedModel()
    for kw in ("allergy", "budget", "appointment"):
        model.reply(json.dumps([kw, kw + " detail"]))
    got = llm_extractor("llm-contextual", model).extract_all(pages, 2)
    assert len(model.requests) == 3
    assert sorted(got.values()) == sorted(
        [("allergy", "allergy detail"), ("budget", "budget detail"),
         ("appointment", "appointment detail")])
    digests = heuristic(pages, 4)
    by_page = {p.id: user_prompt(r) for p, r in zip(pages, model.requests, strict=True)}
    for pid, prompt in by_page.items():
        for other, kws in digests.items():
            line = f"{other}: {', '.join(kws)}"
            assert (line in prompt) == (other != pid), (pid, other)


def test_contextual_failed_page_falls_back_alone() -> None:
    pages = make_pages()
    model = ScriptedModel().reply('["a1"]').reply("garbage").reply('["c1"]')
    with pytest.warns(LLMKeywordWarning):
        got = llm_extractor("llm-contextual", model, concurrency=1).extract_all(pages, 3)
    assert got["p1"] == ("a1",) and got["p3"] == ("c1",)
    assert got["p2"] == heuristic(pages, 3)["p2"]


def test_contextual_live_uses_corpus_digests() -> None:
    pages = make_pages()
    model = ScriptedModel().reply('["x"]')
    llm_extractor("llm-contextual", model).extract(pages[2], Corpus.from_pages(pages), 2)
    prompt = user_prompt(model.requests[0])
    assert "p1: " in prompt and "p2: " in prompt and "p3: " not in prompt


# ---------------------------------------------------------------- hybrid
def test_hybrid_adds_one_keyword_to_the_heuristic_base() -> None:
    pages = make_pages()
    base = heuristic(pages, 3)
    model = ScriptedModel().reply('{"p1": "peanuts", "p2": ["trip cost"], "p3": "rescheduled"}')
    got = llm_extractor("hybrid", model).extract_all(pages, 3)
    assert len(model.requests) == 1
    assert got == {"p1": (*base["p1"][:2], "peanuts"), "p2": (*base["p2"][:2], "trip cost"),
                   "p3": (*base["p3"][:2], "rescheduled")}
    prompt = user_prompt(model.requests[0])
    assert "exactly ONE new keyword" in prompt
    assert f"current keywords: {', '.join(base['p1'][:2])}" in prompt


def test_hybrid_extend_keeps_all_heuristic_keywords() -> None:
    pages = make_pages()
    base = heuristic(pages, 2)
    model = ScriptedModel().reply('{"p1": "x1", "p2": "x2", "p3": "x3"}')
    got = llm_extractor("hybrid", model, extend=True).extract_all(pages, 2)
    assert got["p1"] == (*base["p1"], "x1")


def test_hybrid_rejects_repeats_and_falls_back() -> None:
    pages = make_pages()
    base = heuristic(pages, 3)
    repeat = base["p2"][0]
    reply = json.dumps({"p1": "fresh", "p2": repeat, "p3": "fresh"})
    with pytest.warns(LLMKeywordWarning):
        got = llm_extractor("hybrid", ScriptedModel().reply(reply)).extract_all(pages, 3)
    assert got["p1"][-1] == "fresh"
    assert got["p2"] == base["p2"] and got["p3"] == base["p3"]


def test_hybrid_model_error_falls_back() -> None:
    pages = make_pages()
    with pytest.warns(LLMKeywordWarning):
        got = llm_extractor("hybrid", ScriptedModel()).extract_all(pages, 3)
    assert got == heuristic(pages, 3)


# ---------------------------------------------------------------- wiring
def test_register_into_a_private_registry_and_use_it() -> None:
    reg: Registry[KeywordExtractor] = Registry("keyword extractor")
    register_llm_extractors(ScriptedModel().reply('["k"]'), reg)
    assert reg.names() == ["auto", "hybrid", "llm-batch", "llm-contextual"]
    ext = reg.create("llm-contextual", max_tokens=50)
    assert isinstance(ext, KeywordExtractor)
    assert "llm-batch" not in EXTRACTORS or EXTRACTORS is not reg


def test_register_into_global_registry_makes_pager_names_valid() -> None:
    from copage.core.config import PagerConfig
    from copage.core.pager import Pager

    register_llm_extractors(ScriptedModel())
    try:
        pager = Pager(PagerConfig(keywords="hybrid"))
        assert pager.extractor.name == "hybrid"
    finally:
        for name in ("llm-contextual", "llm-batch", "hybrid", "auto"):
            EXTRACTORS.unregister(name)


def test_unknown_name_and_bad_options_are_clear() -> None:
    with pytest.raises(UnknownNameError, match="llm-batch"):
        llm_extractor("llm-nope", ScriptedModel())
    with pytest.raises(ValueError, match="valid options"):
        llm_extractor("llm-batch", ScriptedModel(), threshold=0.5)
    with pytest.raises(ValueError, match="concurrency"):
        llm_extractor("llm-batch", ScriptedModel(), concurrency=0)


def test_works_inside_a_running_event_loop() -> None:
    pages = make_pages()
    model = ScriptedModel().reply('{"p1": ["a"], "p2": ["b"], "p3": ["c"]}')
    gen = llm_extractor("llm-batch", model)

    async def inside() -> dict[str, tuple[str, ...]]:
        return gen.extract_all(pages, 2)

    assert asyncio.run(inside()) == {"p1": ("a",), "p2": ("b",), "p3": ("c",)}


def test_n_zero_and_no_pages_make_no_calls() -> None:
    model = ScriptedModel()
    for name in ("llm-contextual", "llm-batch", "hybrid"):
        assert llm_extractor(name, model).extract_all(make_pages(), 0) == {
            "p1": (), "p2": (), "p3": ()}
        assert llm_extractor(name, model).extract_all([], 3) == {}
    assert model.requests == []


def test_failed_calls_and_fallback_pages_show_in_memory_stats() -> None:
    from copage.memory import PagedMemory

    model = ScriptedModel().reply('["satay", "peanuts"]').reply("I cannot help with that.")
    register_llm_extractors(model)
    try:
        mem = PagedMemory(boundary="fixed_2", resident_pages=1, keywords="llm-contextual")
        texts = ("peanut allergy here", "no satay then", "budget is 450",
                 "for Lisbon only", "Dr Okafor on Friday", "moved again")
        with pytest.warns(LLMKeywordWarning):
            _ = [mem.add("user", text) for text in texts]
        stats = mem.stats().to_dict()["keyword_generator"]
    finally:
        for name in ("llm-contextual", "llm-batch", "hybrid", "auto"):
            EXTRACTORS.unregister(name)
    # page 1: a usable reply; page 2: no keywords in the reply; page 3: script exhausted
    assert stats == {"calls": 3, "failed_calls": 1, "fallback_pages": 2}
