"""Honest figures from the library: ``stats().prompt_tokens`` counts the latest request
as it was sent (the speculative fill included) and ``stats().savings`` says whether
paging has saved money so far, caching priced."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from copage import PagedMemory
from copage.core.promptcache import PRICES, PromptMeter
from copage.eval.paraphrase import synthetic_lines
from copage.llm.scripted import ScriptedModel
from copage.session import PagedChat

FACT = "My sister Ana moved to Porto last spring."
QUESTION = "Did my sister Ana move to Porto?"


def _metered(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> int:
    meter = PromptMeter(PagedMemory().pager.tokenizer)
    meter.record(messages, tools, 0, 0)
    return meter.prompt_tokens


def _chat(mem: PagedMemory, turns: int, **options: Any) -> tuple[PagedChat, ScriptedModel]:
    """A chat (at the defaults, or with ``options``): the fact, then ``turns`` turns of
    other talk."""
    model = ScriptedModel()
    chat = PagedChat(mem, model, **options)
    model.reply("Good to know.")
    chat.send_sync(FACT)
    lines = synthetic_lines(turns, seed=4)
    for user, answer in zip(lines[::2], lines[1::2], strict=False):
        model.reply(answer.text)
        chat.send_sync(user.text)
    return chat, model


PAGED = {"resident_pages": 4}  # paged by count: these chats fit the default budget


def test_prompt_tokens_count_the_request_as_sent_fill_included() -> None:
    mem = PagedMemory(**PAGED)
    chat, model = _chat(mem, 200)
    model.reply("Porto.")
    report = chat.send_sync(QUESTION)
    assert report.speculative  # the fact's page was shown in a fill
    sent = model.requests[-1]
    tools = sent.tools or []
    got = mem.stats().prompt_tokens
    assert got == _metered(sent.messages, tools)
    without_fill = [*sent.messages[:-2], sent.messages[-1]]
    assert FACT in str(sent.messages[-2]["content"])
    assert got > _metered(without_fill, tools)
    # with a question: what context() would build for it (nothing is sent)
    assert mem.stats("Anything new?").prompt_tokens == mem.pager.stats("Anything new?").prompt_tokens


def test_the_figures_survive_reopening(tmp_path: Path) -> None:
    store = f"sqlite://{tmp_path / 'chat.db'}"
    mem = PagedMemory(store=store, conversation_id="c")
    chat, model = _chat(mem, 120)
    model.reply("Porto.")
    chat.send_sync(QUESTION)
    before = mem.stats()
    again = PagedMemory(store=store, conversation_id="c").stats()
    assert again.prompt_tokens == before.prompt_tokens
    assert again.savings == before.savings != {}


def test_savings_price_what_was_sent_against_the_whole_conversation() -> None:
    mem = PagedMemory(**PAGED)
    assert mem.stats().savings == {} and mem.stats().to_dict()["savings"] == {}
    chat, model = _chat(mem, 300)
    model.reply("Porto.")
    chat.send_sync(QUESTION)
    stats = mem.stats()
    assert mem.evicted
    savings = stats.savings
    assert set(savings) == set(PRICES)
    # an independent meter over the requests the model received gives the paged cost
    meter = PromptMeter(mem.pager.tokenizer)
    for request in model.requests:
        meter.record(request.messages, request.tools or [], 0, 0)
    for name, s in savings.items():
        assert s.requests == len(model.requests)
        assert s.paged_usd == pytest.approx(meter.cost[name]["paged_cached"], rel=1e-6)
        assert s.full_usd == pytest.approx(stats.prompt_cache["cost_usd"][name]["full_cached"])
        assert s.saved_usd == pytest.approx(s.full_usd - s.paged_usd)
        assert s.saved == (s.full_usd > s.paged_usd)
        assert stats.to_dict()["savings"][name]["saved"] == s.saved


@pytest.mark.parametrize("turns", [12, 44])  # below and above 1,024 tokens (cached)
def test_an_unpaged_chat_saves_nothing(turns: int) -> None:
    mem = PagedMemory()
    _chat(mem, turns)
    assert not mem.evicted
    assert (mem.stats().prompt_cache or {})["prompt_tokens"] > (2000 if turns > 40 else 0)
    for s in mem.stats().savings.values():  # each request is the conversation itself
        assert s.paged_usd == pytest.approx(s.full_usd, rel=1e-9) and not s.saved


def test_a_recall_turns_later_request_is_metered_and_priced_but_not_for_full_context() -> None:
    ends = []
    for recall in (True, False):  # the same chat; the last turn with and without a recall
        mem = PagedMemory(**PAGED)
        chat, model = _chat(mem, 200, recall_mode="tool")
        before = dict(mem.stats().prompt_cache or {})
        if recall:
            model.tool_call("recall", {"page": mem.evicted[0]})
        model.reply("Porto.")
        report = chat.send_sync(QUESTION)
        assert len(report.recalls) == int(recall)
        ends.append((before, mem.stats(), model.requests[-1 - int(recall):]))
    (before, after, sent), (before_1, after_1, _) = ends
    got = after.prompt_cache or {}
    assert got["requests"] - before["requests"] == 2  # the call after the recall too
    assert got["prompt_tokens"] - before["prompt_tokens"] == sum(
        _metered(r.messages, r.tools or []) for r in sent)
    assert after.prompt_tokens == _metered(sent[-1].messages, sent[-1].tools or [])
    # full context would have sent one request, recall or not: its figures are the same
    got_1 = after_1.prompt_cache or {}
    assert got["full_tokens"] - before["full_tokens"] == got_1["full_tokens"] - before_1[
        "full_tokens"] > 0
    for name, s in after.savings.items():
        assert s.full_usd == pytest.approx(after_1.savings[name].full_usd)
        assert s.paged_usd > after_1.savings[name].paged_usd  # the recall's call is paid
