"""stream_mode="messages" never shows the caller copage's hidden recall exchange."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import pytest

pytest.importorskip("langchain_openai")

from adapter_fixtures import PAGING
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI
from lc_helpers import ToolCallingFake, get_weather, recall, seeded_store

from copage.adapters.langchain import CopageMiddleware
from copage.llm.fake_server import FakeServer, Reply
from copage.stores.inmemory import MemoryStore

QUESTION = "What should I bring to the dentist?"
CONFIG = {"configurable": {"thread_id": "t"}}


def _store() -> MemoryStore:
    return seeded_store("t")


def _calls(msg: Any) -> list[str]:
    names = [c["name"] for c in getattr(msg, "tool_calls", None) or []]
    names += [c.get("name") or "" for c in getattr(msg, "tool_call_chunks", None) or []]
    return names


def _check(streamed: list[Any], answer: str) -> None:
    assert streamed, "nothing was streamed"
    assert not any("recall" in _calls(m) for m in streamed), streamed
    results = [m for m in streamed if isinstance(m, ToolMessage)]
    assert not any(m.name == "recall" or "<page id=" in str(m.content) for m in results)
    text = "".join(str(m.content) for m in streamed if isinstance(m, AIMessage | AIMessageChunk))
    assert answer in text


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_streamed_openai_reply_hides_the_recall(mode: str) -> None:
    script = deque([Reply(tool_calls=[("recall", {"page": "p3"})]),
                    Reply(text="Bring your insurance card.")])
    with FakeServer(lambda _body: script.popleft()) as up:
        model = ChatOpenAI(model="fake-model", base_url=up.url, api_key="sk-test",
                           max_retries=0)
        agent = create_agent(model, tools=[get_weather],
                             middleware=[CopageMiddleware(_store(), recall_mode="tool", **PAGING)])
        inp = {"messages": [HumanMessage(QUESTION)]}
        if mode == "sync":
            streamed = [m for m, _meta in agent.stream(inp, CONFIG, stream_mode="messages")]
        else:
            async def run() -> list[Any]:
                return [m async for m, _meta in agent.astream(inp, CONFIG,
                                                               stream_mode="messages")]
            streamed = asyncio.run(run())
    assert len(up.received) == 2 and up.received[0].get("stream") is True  # really streamed
    _check(streamed, "Bring your insurance card.")


def test_mixed_reply_streams_only_the_app_call() -> None:
    """A reply with a recall and an app call: the caller sees the app call alone."""
    script = deque([Reply(tool_calls=[("recall", {"page": "p3"}),
                                      ("get_weather", {"city": "Lisbon"})]),
                    Reply(text="Sunny; bring your insurance card.")])
    with FakeServer(lambda _body: script.popleft()) as up:
        model = ChatOpenAI(model="fake-model", base_url=up.url, api_key="sk-test",
                           max_retries=0)
        agent = create_agent(model, tools=[get_weather],
                             middleware=[CopageMiddleware(_store(), recall_mode="tool", **PAGING)])
        streamed = [m for m, _meta in agent.stream({"messages": [HumanMessage(QUESTION)]},
                                                    CONFIG, stream_mode="messages")]
    _check(streamed, "Sunny; bring your insurance card.")
    assert any("get_weather" in _calls(m) for m in streamed)


def test_non_streaming_model_hides_the_recall() -> None:
    model = ToolCallingFake(responses=[recall("p3"), AIMessage(content="Bring the card.")])
    agent = create_agent(model, tools=[], middleware=[CopageMiddleware(_store(), recall_mode="tool", **PAGING)])
    streamed = [m for m, _meta in agent.stream({"messages": [HumanMessage(QUESTION)]},
                                                CONFIG, stream_mode="messages")]
    _check(streamed, "Bring the card.")


@pytest.mark.parametrize("script, answer", [
    ([Reply(text="RECALL p1"), Reply(text="It is 4471.")], "It is 4471."),
    ([Reply(text="p1"), Reply(text="It is 4471.")], "It is 4471."),
    ([Reply(tool_calls=[("recall", {"page": "p1"})]),
      Reply(text="Your code is 4471.\nRECALL p3")], "Your code is 4471."),
])
def test_a_recall_written_as_text_is_not_streamed(script: list[Reply], answer: str) -> None:
    queue = deque(script)
    with FakeServer(lambda _body: queue.popleft()) as up:
        model = ChatOpenAI(model="fake-model", base_url=up.url, api_key="sk-test",
                           max_retries=0)
        agent = create_agent(model, tools=[], middleware=[
            CopageMiddleware(_store(), max_recalls=1, recall_mode="tool", **PAGING)])
        streamed = [m for m, _meta in agent.stream({"messages": [HumanMessage(QUESTION)]},
                                                   CONFIG, stream_mode="messages")]
    assert not queue and up.received[0].get("stream") is True
    text = "".join(str(m.content) for m in streamed if isinstance(m, AIMessage | AIMessageChunk))
    assert answer in text
    assert "RECALL" not in text and "p1" not in text and "p3" not in text, text


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_text_before_a_recall_streams_as_the_answer_has_it(mode: str) -> None:
    """The engine keeps text written before a recall in the answer, a blank line before
    the final reply's text: the stream shows the same text."""
    script = deque([Reply(text="Let me look.", tool_calls=[("recall", {"page": "p3"})]),
                    Reply(text="Bring your insurance card.")])
    with FakeServer(lambda _body: script.popleft()) as up:
        model = ChatOpenAI(model="fake-model", base_url=up.url, api_key="sk-test",
                           max_retries=0)
        agent = create_agent(model, tools=[],
                             middleware=[CopageMiddleware(_store(), recall_mode="tool", **PAGING)])
        inp = {"messages": [HumanMessage(QUESTION)]}
        if mode == "sync":
            streamed = [m for m, _meta in agent.stream(inp, CONFIG, stream_mode="messages")]
        else:
            async def run() -> list[Any]:
                return [m async for m, _meta in agent.astream(inp, CONFIG,
                                                               stream_mode="messages")]
            streamed = asyncio.run(run())
    answer = "Let me look.\n\nBring your insurance card."
    chunks = [m for m in streamed if isinstance(m, AIMessageChunk)]
    assert "".join(str(m.content) for m in chunks) == answer
    _check(streamed, answer)
