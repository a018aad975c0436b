"""Speculative fill: the best-matching evicted pages within an allowance, shown per turn."""

from __future__ import annotations

import pytest
from session_helpers import new_memory

from copage import PagedMemory
from copage.core.tokens import get_tokenizer
from copage.llm.scripted import ScriptedModel
from copage.session import FillSettings, PagedChat, Speculator, with_fill
from copage.session.speculate import (
    DEFAULT_QUESTION_FACTOR,
    FILL_HEADER,
    Speculation,
    asks,
    asks_back,
)

QUESTION = "Is the dentist in Zurich before Maria turns forty, and is my laptop budget enough?"


def test_fill_takes_every_matching_page_that_fits() -> None:
    """The ranked fill of whole pages (``unit="pages"``; the default passage fill:
    tests/session/test_speculative_passages.py). ``whole=False`` here and below: with
    it, a question seeing every evicted page within the allowance gets them all, tested
    further down."""
    mem = new_memory()  # p1..p4 evicted
    spec = Speculator(threshold=0.0, whole=False, unit="pages").plan(mem, QUESTION)
    assert set(spec.paged_in) == {"p2", "p3", "p4"}  # laptop, dentist, Maria; not the allergy
    assert spec.text.startswith(FILL_HEADER)
    assert spec.text.index('<page id="p2">') < spec.text.index('<page id="p3">')  # page order
    assert spec.tokens == get_tokenizer(mem.config.tokenizer).count(spec.text)


def test_fill_respects_its_allowance_and_page_cap() -> None:
    mem = new_memory()
    full = Speculator(threshold=0.0, whole=False, unit="pages").plan(mem, QUESTION)
    for tokens in range(0, full.tokens + 1, 7):
        spec = Speculator(threshold=0.0, tokens=tokens, whole=False, unit="pages").plan(mem, QUESTION)
        assert spec.tokens <= tokens
        assert set(spec.paged_in) <= set(full.paged_in)
        assert spec.paged_in == full.paged_in[: len(spec.paged_in)] or len(spec.paged_in) <= 2
    assert Speculator(threshold=0.0, tokens=full.tokens, whole=False, unit="pages").plan(mem, QUESTION).paged_in == full.paged_in
    assert Speculator(threshold=0.0, tokens=full.tokens - 1, whole=False, unit="pages").plan(mem, QUESTION).tokens < full.tokens
    one = Speculator(threshold=0.0, pages=1, whole=False, unit="pages").plan(mem, QUESTION)
    assert one.paged_in == full.paged_in[:1] and one.paged_in[0] == one.best


def test_fill_threshold_gates_the_first_page_and_relative_the_rest() -> None:
    mem = new_memory()
    # a question needs threshold x question_factor (0 by default: any match); a statement
    # needs the threshold itself
    assert Speculator(threshold=5.0, whole=False, unit="pages").plan(mem, QUESTION).paged_in
    assert Speculator(threshold=5.0, whole=False, unit="pages", question_factor=1.0).plan(
        mem, QUESTION).paged_in == ()
    assert Speculator(threshold=5.0, whole=False, unit="pages").plan(
        mem, "The dentist in Zurich and my laptop budget.").paged_in == ()
    ranked = Speculator(whole=False, unit="pages").ranked(mem, QUESTION)
    scores = [s for _, s in ranked]
    assert scores == sorted(scores, reverse=True) and ranked[0][0] == Speculator(whole=False, unit="pages").score(mem, QUESTION)[0]
    top = scores[0]
    cut = (scores[0] + scores[-1]) / 2 / top  # keeps the pages above the middle score
    spec = Speculator(threshold=0.0, relative=cut, whole=False, unit="pages").plan(mem, QUESTION)
    assert spec.paged_in == tuple(p for p, s in ranked if s >= cut * top)
    assert 0 < len(spec.paged_in) < len(ranked)


def test_plan_is_deterministic_and_changes_nothing() -> None:
    mem = new_memory()
    before = (list(mem.resident), list(mem.evicted))
    a = Speculator(threshold=0.0, whole=False).plan(mem, QUESTION)
    b = Speculator(threshold=0.0, whole=False).plan(mem, QUESTION)
    assert a == b and (list(mem.resident), list(mem.evicted)) == before


@pytest.mark.parametrize(("option", "value", "message"), [
    ("tokens", -1, "speculative_tokens must be an int >= 0"),
    ("tokens", 1.5, "speculative_tokens must be an int >= 0"),
    ("pages", 0, "speculative_pages must be an int >= 1 or None"),
    ("relative", 1.5, "speculative_relative must be a number from 0 to 1"),
    ("threshold", -0.1, "speculative_threshold must be a number >= 0"),
    ("neighbours", -1, "speculative_neighbours must be an int >= 0"),
])
def test_options_are_validated(option: str, value: object, message: str) -> None:
    """The same check, and the same message, for a Speculator, a FillSettings and
    PagedChat's older keyword arguments."""
    with pytest.raises(ValueError, match=message):
        Speculator(**{option: value})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        FillSettings(**{option: value})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        PagedChat(new_memory(), ScriptedModel(), **{f"speculative_{option}": value})


def test_with_fill_goes_before_the_last_user_message() -> None:
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"}, {"role": "user", "content": "q"}]
    spec = Speculation("p1", 1.0, ("p1",), "FILL", 1)
    out = with_fill(msgs, spec)
    assert [m["content"] for m in out] == ["s", "a", "b", "FILL", "q"]
    assert with_fill(msgs, Speculation(None, 0.0)) == msgs and with_fill(msgs, None) == msgs


async def test_fill_keeps_the_prompt_prefix_of_the_next_turn() -> None:
    """The fill is per turn: the next request repeats the previous one up to the fill."""
    mem = new_memory()
    model = ScriptedModel().reply("one").reply("two")
    chat = PagedChat(mem, model, recall_mode="speculative+tool")
    first = await chat.send(QUESTION)
    assert first.speculative and mem.resident == ["p5", "p6"]
    await chat.send("thanks, that helps.")  # a statement matching nothing: no fill
    a, b = model.requests[0].messages, model.requests[1].messages
    at = next(i for i, m in enumerate(a) if FILL_HEADER in str(m.get("content")))
    assert b[:at] == a[:at] and b[at] == a[at + 1]  # same prefix; the question follows
    assert not any(FILL_HEADER in str(m.get("content")) for m in b)


async def test_prompt_cache_meters_the_request_as_sent_fill_included() -> None:
    """``stats().prompt_cache`` counts what the model is sent: the fill and the prompt
    style included (before, it metered the pager's context without them)."""
    from copage.core.promptcache import PromptMeter

    mem = new_memory()
    model = ScriptedModel().reply("one").reply("two")
    chat = PagedChat(mem, model, recall_mode="speculative")
    first = await chat.send(QUESTION)
    assert first.speculative
    await chat.send("thanks, and the weather?")
    expected = PromptMeter(get_tokenizer(mem.config.tokenizer))
    for request in model.requests:
        expected.record(request.messages, request.tools or [], 0, 0)
    got = mem.stats().prompt_cache
    assert got is not None and got["requests"] == 2
    want = expected.summary()
    assert got["prompt_tokens"] == want["prompt_tokens"]
    assert got["prefix_tokens"] == want["prefix_tokens"]
    assert got["prefix_tokens"] < got["prompt_tokens"]


@pytest.mark.parametrize(("message", "expected"), [
    ("What am I allergic to?", True),
    ("Which phone should I get", True),  # no question mark: a wh-word opens it
    ("did I tell you about the dentist", True),
    ("Anyway. How's Maria doing", True),  # a later sentence opens a question
    ("Please remind me of my laptop budget.", True),
    ("I forgot the dentist's address, it was in Zurich", True),
    ("tell me the plumber's number", True),
    ("I love the new sofa.", False),
    ("The dentist in Zurich was fine, Maria says hi.", False),
    ("Whatever works for you!", False),  # "whatever" is not "what"
    ("", False),
])
def test_asks_tells_questions_from_statements(message: str, expected: bool) -> None:
    assert asks(message) is expected


@pytest.mark.parametrize(("message", "expected"), [
    ("What's my budget for the sofa?", True),
    ("Which phone should I get", True),
    ("remind me of the plumber's number", True),
    ("How was your weekend?", False),  # asks the other party
    ("What did Maria say about Zurich?", False),
    ("My sofa arrived today.", False),  # first person, but no question
])
def test_asks_back_is_a_first_person_question(message: str, expected: bool) -> None:
    assert asks_back(message) is expected


def test_the_question_rule_picks_which_messages_get_the_lower_threshold() -> None:
    yours, mine = "How was the dentist in Zurich?", "How was my dentist in Zurich?"
    back = Speculator(threshold=0.4, question_factor=0.5, question_rule="asks_back")
    assert back.threshold_for(yours) == 0.4 and back.threshold_for(mine) == pytest.approx(0.2)
    any_ = Speculator(threshold=0.4, question_factor=0.5, question_rule="asks")
    assert any_.threshold_for(yours) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="question_rule must be one of asks, asks_back"):
        Speculator(question_rule="nope")


def _between(mem: object, message: str) -> float:
    """A threshold above the best page's score for ``message`` and below twice it."""
    _, score = Speculator().score(mem, message)  # type: ignore[arg-type]
    assert score > 0
    return score * 1.5


def test_a_question_needs_threshold_times_question_factor() -> None:
    """The same words fill as a question and not as a statement when the best page's
    score lies between ``threshold`` x ``question_factor`` and ``threshold``."""
    mem = new_memory()
    statement = "the dentist in Zurich and my laptop budget"
    question = "the dentist in Zurich and my laptop budget?"
    th = _between(mem, statement)
    spec = Speculator(threshold=th, question_factor=0.5, question_rule="asks", whole=False)
    assert spec.threshold_for(question) == pytest.approx(th * 0.5)
    assert spec.threshold_for(statement) == th
    assert spec.plan(mem, statement).paged_in == ()
    assert spec.plan(mem, question).paged_in != ()
    assert Speculator(threshold=th, question_factor=1.0, question_rule="asks", whole=False).plan(mem, question).paged_in == ()
    assert Speculator(threshold=0.0, question_factor=0.5, whole=False).plan(mem, statement).paged_in != ()


def test_question_factor_is_validated_and_defaults_to_the_module_constant() -> None:
    for bad in (-0.1, 1.5, True, "0.5"):
        with pytest.raises(ValueError, match="question_factor must be a number from 0 to 1"):
            Speculator(question_factor=bad)  # type: ignore[arg-type]
    spec = Speculator(threshold=0.4)
    assert spec.question_threshold == pytest.approx(0.4 * DEFAULT_QUESTION_FACTOR)


async def test_paged_chat_takes_the_question_rule_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """PagedChat plans through :class:`Speculator` with the module's default question
    factor (the proxy and LangChain build theirs the same way): a question whose best
    page scores between ``threshold`` x the factor and ``threshold`` is filled, the same
    words as a statement are not."""
    import sys

    # the package exports a function named ``speculate``: reach the module itself
    monkeypatch.setattr(sys.modules["copage.session.speculate"], "DEFAULT_QUESTION_FACTOR", 0.5)
    mem = new_memory()
    question = "the dentist in Zurich and my laptop budget?"
    model = ScriptedModel().reply("one").reply("two")
    chat = PagedChat(mem, model, recall_mode="speculative",
                     speculative_threshold=_between(mem, question))
    asked = await chat.send(question)
    told = await chat.send("the dentist in Zurich and my laptop budget")
    assert asked.speculative and not told.speculative


def test_whole_shows_every_evicted_page_to_a_question_when_they_all_fit() -> None:
    """A first-person question sharing no word with any page (a paraphrase) gets every
    evicted page when they fit the allowance; not a statement, not when they do not fit."""
    mem = new_memory()  # p1..p4 evicted
    question = "What should I cook tonight for my friends?"
    assert Speculator(threshold=0.0).ranked(mem, question) == []  # no word in common
    everything = Speculator(threshold=0.35, whole=True).plan(mem, question)
    assert sorted(everything.paged_in) == sorted(mem.evicted) and everything.best is None
    assert everything.tokens == get_tokenizer(mem.config.tokenizer).count(everything.text)
    assert Speculator(threshold=0.35, whole=False).plan(mem, question).paged_in == ()
    statement = "I cook tonight for my friends."
    assert Speculator(threshold=0.35, whole=True).plan(mem, statement).paged_in == ()
    short = Speculator(threshold=0.35, whole=True, tokens=everything.tokens - 1)
    assert short.plan(mem, question).paged_in == ()
    assert Speculator(threshold=0.35, whole=True, pages=3).plan(mem, question).paged_in == ()
    assert Speculator(whole=True, pages=4).plan(mem, question).paged_in == everything.paged_in
    matched = Speculator(threshold=0.35, whole=True).plan(mem, "what about my laptop budget?")
    assert matched.paged_in[0] == matched.best == "p2"  # the matching page first, then the rest
    assert sorted(matched.paged_in) == sorted(mem.evicted)


def test_a_whole_fill_matching_no_page_is_recorded() -> None:
    """``page_in`` records the ``speculative`` event of a whole fill whose pages match
    no word of the message (before, only a fill with a best page was recorded)."""
    mem = new_memory()
    spec = Speculator(whole=True).page_in(mem, "What should I cook tonight for my friends?")
    assert spec.best is None and spec.paged_in
    events = [e for e in mem.store.events("conv") if e.kind == "speculative"]
    assert len(events) == 1 and events[0].page_index is None
    assert events[0].detail["paged_in"] == list(spec.paged_in)


async def test_stats_count_the_turns_with_a_fill_and_keep_them_when_reopened(tmp_path) -> None:
    """A fill pages nothing in (``speculative_page_ins`` stays 0), so ``stats()`` counts
    fills apart: ``fills`` turns, ``fill_pages`` pages; stored with the conversation."""
    store = f"sqlite:///{tmp_path / 'fills.db'}"
    mem = new_memory(store)
    chat = PagedChat(mem, ScriptedModel().reply("one").reply("two"), recall_mode="speculative")
    first = await chat.send(QUESTION)
    assert first.speculative  # the pages it showed
    await chat.send("thanks, that helps.")  # no fill
    got = mem.stats()
    assert (got.fills, got.fill_pages) == (1, len(first.speculative))
    assert got.speculative_page_ins == 0 and got.to_dict()["fills"] == 1
    del chat, mem
    again = PagedMemory(store=store, conversation_id="conv").stats()
    assert (again.fills, again.fill_pages) == (got.fills, got.fill_pages)
