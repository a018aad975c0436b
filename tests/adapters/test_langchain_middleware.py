"""CopageMiddleware with LangChain's create_agent and a fake tool-calling chat model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain")

import dense_chat
from adapter_fixtures import PAGING, TURNS
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from lc_helpers import ToolCallingFake, recall, tool_names

from copage.adapters.langchain import CopageMiddleware
from copage.core.dense_rank import DenseRanker

WEATHER_CALLS: list[str] = []


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    WEATHER_CALLS.append(city)
    return f"Sunny in {city}."


def _history_replies() -> list[AIMessage]:
    return [AIMessage(content=t) for r, t in TURNS if r == "assistant"]


def _agent(model: ToolCallingFake, mw: CopageMiddleware, **kw: Any) -> Any:
    return create_agent(model, tools=[get_weather], middleware=[mw],
                        system_prompt="You are a helpful assistant.", **kw)


def _play_history(agent: Any, thread: str) -> None:
    for role, text in TURNS:
        if role == "user":
            agent.invoke({"messages": [HumanMessage(text)]},
                         {"configurable": {"thread_id": thread}})


def _text(messages: list[Any]) -> str:
    return "\n".join(str(m.content) for m in messages)


def test_model_sees_the_paged_view_and_recall_is_served_inside(tmp_path: Path) -> None:
    model = ToolCallingFake(responses=[*_history_replies(), recall("p3"),
                                       AIMessage(content="Bring your insurance card.")])
    mw = CopageMiddleware(f"sqlite:///{tmp_path / 'c.db'}", recall_mode="tool", **PAGING)
    agent = _agent(model, mw, checkpointer=InMemorySaver())
    _play_history(agent, "t1")
    out = agent.invoke({"messages": [HumanMessage("What should I bring to the dentist?")]},
                       {"configurable": {"thread_id": "t1"}})

    first, second = model.seen[-2], model.seen[-1]
    assert isinstance(first[0], SystemMessage)
    system = str(first[0].content)
    assert system.startswith("You are a helpful assistant.")  # the app's prompt first
    assert "[p3: 14 November" in system and "[p1: 4471" in system  # bookmarks of evicted pages
    assert "insurance card" not in _text(first)  # p3 is evicted: not sent
    assert "locker code is 4471" not in _text(first[1:])
    assert len(first) < len(out["messages"])  # the model got fewer messages than the state
    assert tool_names(model.bound[-2]) == ["get_weather", "recall"]
    recalled = [m for m in second if isinstance(m, ToolMessage)]
    assert len(recalled) == 1 and "insurance card" in str(recalled[0].content)

    # The recall exchange stays inside the model call: the state holds only the answer.
    assert out["messages"][-1].content == "Bring your insurance card."
    assert not any(isinstance(m, ToolMessage) for m in out["messages"])
    assert all(not getattr(m, "tool_calls", None) for m in out["messages"])
    mem = mw.memory("t1")
    assert "p3" in mem.resident and mem.stats().recalls == 1
    assert mem.turns[-1].text == "Bring your insurance card."  # stored by after_agent
    assert [t.role for t in mem.turns].count("tool") == 0


def test_app_tools_run_beside_recall_and_mixed_replies_page_in() -> None:
    WEATHER_CALLS.clear()
    mixed = AIMessage(content="", tool_calls=[
        {"name": "recall", "args": {"page": "p1"}, "id": "c1", "type": "tool_call"},
        {"name": "get_weather", "args": {"city": "Lisbon"}, "id": "c2", "type": "tool_call"}])
    model = ToolCallingFake(responses=[*_history_replies(), mixed,
                                       AIMessage(content="Sunny; code 4471.")])
    mw = CopageMiddleware(recall_mode="tool", **PAGING)
    agent = _agent(model, mw, checkpointer=InMemorySaver())
    _play_history(agent, "t2")
    out = agent.invoke({"messages": [HumanMessage("Weather in Lisbon, and my locker code?")]},
                       {"configurable": {"thread_id": "t2"}})
    assert WEATHER_CALLS == ["Lisbon"]  # the app's tool ran, through the agent's tool node
    ai = [m for m in out["messages"] if isinstance(m, AIMessage) and m.tool_calls]
    assert [c["name"] for c in ai[-1].tool_calls] == ["get_weather"]  # recall stripped
    last_call = model.seen[-1]
    assert "locker code is 4471" in _text(last_call)  # p1 was paged in: now resident
    assert "Sunny in Lisbon." in _text(last_call)  # the app's tool result is in the view
    assert out["messages"][-1].content == "Sunny; code 4471."


def test_history_survives_a_restart_through_the_store(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'c.db'}"
    first = ToolCallingFake(responses=_history_replies())
    _play_history(_agent(first, CopageMiddleware(store, recall_mode="tool", **PAGING),
                         checkpointer=InMemorySaver()), "t3")
    # A new process: new middleware, new model, an empty checkpointer (or none at all).
    model = ToolCallingFake(responses=[recall("p1"), AIMessage(content="It is 4471.")])
    mw = CopageMiddleware(store, recall_mode="tool", **PAGING)
    out = _agent(model, mw).invoke({"messages": [HumanMessage("My locker code?")]},
                                   {"configurable": {"thread_id": "t3"}})
    assert "[p1: 4471" in str(model.seen[0][0].content)
    assert "Biscuit it is." in _text(model.seen[0])  # resident turns rebuilt from the store
    assert "4471" in _text([m for m in model.seen[1] if isinstance(m, ToolMessage)])
    assert out["messages"][-1].content == "It is 4471."
    assert len(mw.memory("t3").turns) == len(TURNS) + 2


def test_recall_errors_and_the_cap() -> None:
    model = ToolCallingFake(responses=[
        *_history_replies(), recall("p99", "a"), recall("p1", "b"), recall("p2", "c"),
        AIMessage(content="done")])
    mw = CopageMiddleware(max_recalls=2, recall_mode="tool", **PAGING)
    agent = _agent(model, mw, checkpointer=InMemorySaver())
    _play_history(agent, "t4")
    out = agent.invoke({"messages": [HumanMessage("?")]}, {"configurable": {"thread_id": "t4"}})
    results = [str(m.content) for m in model.seen[-1] if isinstance(m, ToolMessage)]
    assert results[0].startswith("error: there is no page p99")
    assert "4471" in results[1]
    assert "limit of 2 recall calls" in results[2]  # refused: answer now
    assert "recall" not in tool_names(model.bound[-1])  # no longer offered
    assert out["messages"][-1].content == "done"


def test_no_conversation_is_a_clear_error() -> None:
    model = ToolCallingFake(responses=[AIMessage(content="hi")])
    with pytest.raises(ValueError, match="thread_id"):
        _agent(model, CopageMiddleware(**PAGING)).invoke({"messages": [HumanMessage("hi")]})


@pytest.mark.parametrize("thread", ["user 42", "a/b", "café"])
def test_a_thread_id_outside_the_one_id_rule_is_a_clear_error(thread: str) -> None:
    """What the middleware stores, the proxy, the inspector and MCP must reach
    (copage.ids); before, any thread_id was stored, and MCP refused to read it."""
    model = ToolCallingFake(responses=[AIMessage(content="hi")])
    mw = CopageMiddleware(**PAGING)
    with pytest.raises(ValueError, match="conversation id .* must be 1-128 characters"):
        _agent(model, mw).invoke({"messages": [HumanMessage("hi")]},
                                 {"configurable": {"thread_id": thread}})
    assert mw.pool.store.list_conversations() == [] and model.seen == []


async def test_async_agent() -> None:
    model = ToolCallingFake(responses=[*_history_replies(), recall("p2"),
                                       AIMessage(content="1800 euros.")])
    mw = CopageMiddleware(conversation_id="fixed", recall_mode="tool", **PAGING)
    agent = _agent(model, mw, checkpointer=InMemorySaver())
    for role, text in TURNS:
        if role == "user":
            await agent.ainvoke({"messages": [HumanMessage(text)]},
                                {"configurable": {"thread_id": "x"}})
    out = await agent.ainvoke({"messages": [HumanMessage("Lisbon budget?")]},
                              {"configurable": {"thread_id": "x"}})
    assert "1800 euros" in _text([m for m in model.seen[-1] if isinstance(m, ToolMessage)])
    assert out["messages"][-1].content == "1800 euros."
    assert "p2" in mw.memory("fixed").resident


async def test_a_sync_agent_called_inside_a_running_event_loop() -> None:
    """The sync middleware runs the engine's async loop without an event loop of its own."""
    model = ToolCallingFake(responses=[*_history_replies(), recall("p2"),
                                       AIMessage(content="1800 euros.")])
    mw = CopageMiddleware(recall_mode="tool", **PAGING)
    agent = _agent(model, mw, checkpointer=InMemorySaver())
    _play_history(agent, "t6")  # agent.invoke, while this coroutine's loop is running
    out = agent.invoke({"messages": [HumanMessage("Lisbon budget?")]},
                       {"configurable": {"thread_id": "t6"}})
    assert "1800 euros" in _text([m for m in model.seen[-1] if isinstance(m, ToolMessage)])
    assert out["messages"][-1].content == "1800 euros."


async def test_concurrent_async_runs_on_one_conversation_take_turns() -> None:
    """The conversation is locked for a model call; a second run waits off the event loop."""
    import asyncio

    mw = CopageMiddleware(conversation_id="shared", **PAGING)
    agents = [_agent(ToolCallingFake(responses=[AIMessage(content=f"answer {i}")], sleep=0.2),
                     mw) for i in range(2)]
    outs = await asyncio.wait_for(asyncio.gather(*(
        a.ainvoke({"messages": [HumanMessage(f"question {i}")]},
                  {"configurable": {"thread_id": f"run{i}"}}) for i, a in enumerate(agents))), 10)
    assert sorted(str(o["messages"][-1].content) for o in outs) == ["answer 0", "answer 1"]
    texts = [t.text for t in mw.memory("shared").turns]
    assert sorted(texts) == ["answer 0", "answer 1", "question 0", "question 1"]


def test_the_conversation_is_locked_for_the_model_call() -> None:
    from copage.stores.inmemory import MemoryStore

    store = MemoryStore()
    held: list[bool] = []

    class Probe(ToolCallingFake):
        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> Any:
            with store.try_lock("c") as taken:
                held.append(not taken)
            return super()._generate(messages, stop, run_manager, **kwargs)

    model = Probe(responses=[AIMessage(content="hi")])
    _agent(model, CopageMiddleware(store, conversation_id="c", **PAGING)).invoke(
        {"messages": [HumanMessage("hello")]})
    with store.try_lock("c") as taken:
        assert taken  # released after the run
    assert held == [True]


def test_an_empty_reply_is_asked_again_once_then_is_an_error() -> None:
    from copage.llm.errors import BadResponse

    model = ToolCallingFake(responses=[AIMessage(content=""), AIMessage(content="hi")])
    out = _agent(model, CopageMiddleware(conversation_id="e1", **PAGING)).invoke(
        {"messages": [HumanMessage("hello")]})
    assert out["messages"][-1].content == "hi" and len(model.seen) == 2
    model = ToolCallingFake(responses=[AIMessage(content=""), AIMessage(content=" ")])
    with pytest.raises(BadResponse, match="empty reply twice"):
        _agent(model, CopageMiddleware(conversation_id="e2", **PAGING)).invoke(
            {"messages": [HumanMessage("hello")]})


@pytest.mark.parametrize("dense", [False, True])
def test_the_dense_channel_brings_back_a_fact_asked_in_other_words(dense: bool) -> None:
    """``dense=``: the fill offers the best passage by meaning first, so the evicted fact
    reaches the model though the question shares no word with it; BM25 alone cannot."""
    model = ToolCallingFake(responses=[AIMessage(content="Better skip the satay.")])
    ranker = DenseRanker(dense_chat.ConceptVectors()) if dense else None
    mw = CopageMiddleware(dense_chat.seeded("d"), dense=ranker, **dense_chat.PAGING)
    assert mw.speculator.dense is ranker
    _agent(model, mw).invoke({"messages": [HumanMessage(dense_chat.QUESTION)]},
                             {"configurable": {"thread_id": "d"}})
    (sent,) = model.seen
    assert dense_chat.QUESTION in _text(sent)
    assert (dense_chat.FACT_SHOWN in _text(sent)) is dense
    assert "p1" in mw.memory("d").evicted  # shown for the call, not paged in


def test_a_chat_that_is_not_paged_costs_what_full_context_costs() -> None:
    """Nothing evicted: the request is the conversation as it is, with the agent's own
    system prompt, and the meter counts full context with that prompt too, so the
    savings are nil, not a loss."""
    model = ToolCallingFake(responses=[AIMessage(content=f"Reply {i}.") for i in range(4)])
    mw = CopageMiddleware()
    agent = _agent(model, mw, checkpointer=InMemorySaver())
    for i in range(4):
        agent.invoke({"messages": [HumanMessage(f"Small talk number {i} about the weather.")]},
                     {"configurable": {"thread_id": "short"}})
    mem = mw.memory("short")
    pc = mem.stats().prompt_cache
    assert not mem.evicted and pc is not None and pc["requests"] == 4
    assert pc["prompt_tokens"] == pc["full_tokens"]


class _TooLong(ToolCallingFake):
    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:
        raise ValueError("Error code: 400 - {'error': {'message': 'request (6520 tokens) "
                         "exceeds the available context size (4096 tokens)'}}")


def test_a_model_error_for_a_too_long_request_carries_what_to_do() -> None:
    """The model's own error (an SDK's, here a ValueError) is raised as it is, with a note
    naming the paging budget that fits the window it reports."""
    mw = CopageMiddleware()
    agent = _agent(_TooLong(responses=[AIMessage(content="unused")]), mw)
    with pytest.raises(ValueError, match="context size") as info:
        agent.invoke({"messages": [HumanMessage("Hello there.")]},
                     {"configurable": {"thread_id": "long"}})
    notes = getattr(info.value, "__notes__", [])
    assert any("budget_tokens=1600" in n for n in notes)


class _SmallWindow(ToolCallingFake):
    """Refuses, as an SDK raises llama.cpp's 400, a request over 4,096 of its tokens."""

    refused: int = 0

    def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> Any:
        from copage.core.tokens import get_tokenizer

        n = int(1.3 * sum(get_tokenizer().count(str(m.content)) for m in messages))
        if n > 4096:
            self.refused += 1
            raise ValueError(f"Error code: 400 - {{'error': {{'message': 'request ({n} tokens) "
                             "exceeds the available context size (4096 tokens)'}}")
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_a_long_history_is_paged_down_to_the_models_window() -> None:
    """At the defaults a 400-message history is not paged; the model refuses it for its
    length; the middleware pages it down and asks again; the agent gets its answer."""
    model = _SmallWindow(responses=[AIMessage(content="Ana lives in Porto.")])
    mw = CopageMiddleware()
    history: list[Any] = [HumanMessage("My sister Ana moved to Porto last spring."),
                          AIMessage(content="Noted.")]
    for i in range(200):
        history += [HumanMessage(f"Small talk {i}: the weather, the trains and lunch {i}."),
                    AIMessage(content=f"Sure, {i}.")]
    out = _agent(model, mw).invoke(
        {"messages": [*history, HumanMessage("Where does my sister live?")]},
        {"configurable": {"thread_id": "window"}})
    assert out["messages"][-1].content == "Ana lives in Porto."
    assert model.refused == 1 and len(model.seen) == 1  # refused, then answered
    mem = mw.memory("window")
    assert mem.evicted and "Porto" in _text(model.seen[-1])  # the fill brought the fact


async def test_a_long_history_is_paged_down_in_the_async_path_too() -> None:
    model = _SmallWindow(responses=[AIMessage(content="Ana lives in Porto.")])
    mw = CopageMiddleware()
    history: list[Any] = [HumanMessage("My sister Ana moved to Porto last spring.")]
    for i in range(200):
        history += [AIMessage(content=f"Sure, {i}."),
                    HumanMessage(f"Small talk {i}: the weather, the trains and lunch {i}.")]
    out = await _agent(model, mw).ainvoke(
        {"messages": [*history, HumanMessage("Where does my sister live?")]},
        {"configurable": {"thread_id": "window-async"}})
    assert out["messages"][-1].content == "Ana lives in Porto." and model.refused == 1
    assert mw.memory("window-async").evicted


def test_a_growing_history_is_refused_once_then_paged_before_it_is_sent() -> None:
    """The window the refusal told is remembered for the model: as the thread grows on,
    its requests are paged down before they are sent, not refused again."""
    model = _SmallWindow(responses=[AIMessage(content="Ana lives in Porto.") for _ in range(30)])
    mw = CopageMiddleware()
    agent = _agent(model, mw)
    history: list[Any] = [HumanMessage("My sister Ana moved to Porto last spring.")]
    for i in range(200):
        history += [AIMessage(content=f"Sure, {i}."),
                    HumanMessage(f"Small talk {i}: the weather, the trains and lunch {i}.")]
    config: Any = {"configurable": {"thread_id": "grows"}}
    for i in range(25):  # about 150 tokens a turn: several windows of growth
        history.append(HumanMessage(f"News {i}: " + "the council met about the bridge, the "
                                    "tram line and the market square for an hour. " * 5))
        out = agent.invoke({"messages": history}, config)
        assert out["messages"][-1].content == "Ana lives in Porto."
        history = list(out["messages"])
    assert model.refused == 1 and len(model.seen) == 25
