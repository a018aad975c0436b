"""CopageMiddleware's recall modes: PagedChat's names and default, the speculative fill."""

from __future__ import annotations

import asyncio
import inspect
from collections import deque
from typing import Any

import pytest

pytest.importorskip("langchain_openai")

from adapter_fixtures import PAGING, TURNS
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_openai import ChatOpenAI
from lc_helpers import get_weather, seeded_store
from pydantic import SecretStr

from copage.adapters.langchain import CopageMiddleware
from copage.core.promptcache import PromptMeter
from copage.core.tokens import get_tokenizer
from copage.llm.fake_server import FakeServer, Reply
from copage.session import PagedChat
from copage.session.modes import DEFAULT_RECALL_MODE, parse_mode
from copage.session.speculate import FILL_HEADER

QUESTION = "What should I bring to the dentist?"  # p3: the dentist, the insurance card
CID = "t"
CONFIG: RunnableConfig = {"configurable": {"thread_id": CID}}


def _ask(mw: CopageMiddleware, script: list[Reply], questions: list[str], *,
         tools: list[Any] | None = None, run: str = "sync"
         ) -> tuple[list[dict[str, Any]], list[Any]]:
    """Ask each question (a checkpoint-less caller sending only its new message); the
    request bodies the model got and the last run's returned messages."""
    queue = deque(script)
    out: dict[str, Any] = {}
    with FakeServer(lambda _body: queue.popleft()) as up:
        model = ChatOpenAI(model="fake-model", base_url=up.url, api_key=SecretStr("sk-test"),
                           max_retries=0)
        agent = create_agent(model, tools=tools or [], middleware=[mw])

        async def ask_all() -> Any:  # one event loop: the async client is bound to it
            return [await agent.ainvoke({"messages": [HumanMessage(q)]}, CONFIG)
                    for q in questions][-1]

        if run == "sync":
            for q in questions:
                out = agent.invoke({"messages": [HumanMessage(q)]}, CONFIG)
        else:
            out = asyncio.run(ask_all())
    assert not queue, f"{len(queue)} scripted replies were not asked for"
    return up.received, list(out["messages"])


def _fills(body: dict[str, Any]) -> list[int]:
    return [i for i, m in enumerate(body["messages"]) if FILL_HEADER in str(m.get("content"))]


def _tools(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def test_the_default_mode_is_paged_chats() -> None:
    default = inspect.signature(CopageMiddleware).parameters["recall_mode"].default
    assert default == DEFAULT_RECALL_MODE
    assert inspect.signature(PagedChat).parameters["recall_mode"].default == DEFAULT_RECALL_MODE
    assert CopageMiddleware().recall_mode == parse_mode(DEFAULT_RECALL_MODE).name


@pytest.mark.parametrize("run", ["sync", "async"])
def test_the_default_mode_shows_the_matching_page_for_the_call_only(run: str) -> None:
    mw = CopageMiddleware(seeded_store(CID), **PAGING)
    received, returned = _ask(mw, [Reply(text="Bring your insurance card."), Reply(text="ok")],
                              [QUESTION, "Thanks, that is all for now."], run=run)
    first, second = received
    msgs = first["messages"]
    # the fill: one user message just before the question, with p3's text
    assert _fills(first) == [len(msgs) - 2]
    assert msgs[-1] == {"role": "user", "content": QUESTION}
    fill = str(msgs[-2]["content"])
    assert msgs[-2]["role"] == "user" and '<page id="p3">' in fill and "Dr Okafor" in fill
    # answer-only: no recall tool, no bookmark list
    assert "recall" not in _tools(first) and "[p3:" not in str(msgs[0]["content"])
    # for that call only: the next call does not have it (no match), nor does any state
    assert _fills(second) == [] and "Okafor" not in str(second["messages"])
    assert [type(m).__name__ for m in returned] == ["HumanMessage", "AIMessage"]
    assert not any(FILL_HEADER in str(m.content) for m in returned)
    mem = mw.memory(CID)
    assert not any(FILL_HEADER in t.text for t in mem.turns)
    assert [t.text for t in mem.turns[len(TURNS):]] == [
        QUESTION, "Bring your insurance card.", "Thanks, that is all for now.", "ok"]
    assert "p3" in mem.evicted  # shown, not made resident


def test_after_an_app_tool_call_the_fill_stays_before_the_human_message() -> None:
    """Every model call of a run gets the fill just before the latest human message,
    not after the agent's own tool exchange; the state gets none of it."""
    mw = CopageMiddleware(seeded_store(CID), **PAGING)
    question = "Weather in Lisbon, and what should I bring to the dentist?"
    received, returned = _ask(mw, [Reply(tool_calls=[("get_weather", {"city": "Lisbon"})]),
                                   Reply(text="Sunny; bring your insurance card.")],
                              [question], tools=[get_weather])
    for body in received:
        msgs = body["messages"]
        at = msgs.index({"role": "user", "content": question})
        assert _fills(body) == [at - 1] and "Dr Okafor" in str(msgs[at - 1]["content"])
    assert [m["role"] for m in received[1]["messages"][-2:]] == ["assistant", "tool"]
    assert [type(m).__name__ for m in returned] == [
        "HumanMessage", "AIMessage", "ToolMessage", "AIMessage"]
    assert not any(FILL_HEADER in str(m.content) for m in returned)
    assert not any(FILL_HEADER in t.text for t in mw.memory(CID).turns)


def test_the_request_is_metered_as_sent() -> None:
    """``stats().prompt_cache`` counts what the model got: the fill and the answer-only
    system prompt (not the pager's context with its bookmarks)."""
    store = seeded_store(CID)
    mw = CopageMiddleware(store, **PAGING)
    received, _ = _ask(mw, [Reply(text="Bring your insurance card.")], [QUESTION])
    with mw.pool.use(CID, tenant=mw.tenant) as mem:  # the middleware's own (cached) copy
        got = mem.stats().prompt_cache
    want = PromptMeter(get_tokenizer(mem.config.tokenizer))
    for body in received:
        want.record(body["messages"], body.get("tools") or [], 0, 0)
    expected = want.summary()
    assert got is not None and got["requests"] == 1
    assert got["prompt_tokens"] == expected["prompt_tokens"]


@pytest.mark.parametrize("mode, fill, tool", [
    ("tool", False, True), ("speculative+tool", True, True), ("none", False, False),
    ("speculative", True, False)])
def test_each_mode_runs_its_steps(mode: str, fill: bool, tool: bool) -> None:
    mw = CopageMiddleware(seeded_store(CID), recall_mode=mode, **PAGING)
    assert mw.recall_mode == mode
    received, _ = _ask(mw, [Reply(text="Bring your insurance card.")], [QUESTION],
                       tools=[get_weather])
    body = received[0]
    assert bool(_fills(body)) is fill
    assert _tools(body) == (["get_weather", "recall"] if tool else ["get_weather"])
    assert ("[p3:" in str(body["messages"][0]["content"])) is tool  # bookmarks with the tool


def test_without_the_tool_a_recall_is_refused_and_left_out() -> None:
    """The engine's rules hold in the default mode: a recall written as text is not
    served (no tool is offered), the model is told so, and the text is not the answer."""
    mw = CopageMiddleware(seeded_store(CID), **PAGING)
    received, returned = _ask(mw, [Reply(text="RECALL p1"), Reply(text="It is 4471.")],
                              ["What is my gym locker code?"])
    results = [m["content"] for m in received[1]["messages"] if m["role"] == "tool"]
    assert results == ["error: pages cannot be recalled now; answer with what you have."]
    assert returned[-1].content == "It is 4471."
    mem = mw.memory(CID)
    assert "p1" in mem.evicted and mem.stats().recalls == 0
    assert mem.turns[-1].text == "It is 4471."


def test_the_fill_allowance_and_threshold_are_passed_on() -> None:
    mw = CopageMiddleware(seeded_store(CID), speculative_tokens=0, **PAGING)
    assert _fills(_ask(mw, [Reply(text="ok")], [QUESTION])[0][0]) == []
    mw = CopageMiddleware(seeded_store(CID), speculative_threshold=50.0, **PAGING)
    assert mw.speculator.threshold == 50.0
    # a statement: no page reaches the threshold (a first-person question would still
    # see every evicted page when they all fit: ``Speculator.whole``)
    assert _fills(_ask(mw, [Reply(text="ok")], ["I will bring it to the dentist."])[0][0]) == []
    with pytest.raises(ValueError, match="speculative_tokens"):
        CopageMiddleware(speculative_tokens=-1)


@pytest.mark.parametrize("bad", ["tools", "choose", "choose+tool", "auto", "speculative+x"])
def test_a_bad_recall_mode_is_a_clear_error(bad: str) -> None:
    with pytest.raises(ValueError, match=r"valid: speculative, tool, speculative\+tool, none"):
        CopageMiddleware(recall_mode=bad)
