"""CopageMiddleware with ChatOpenAI against a loopback OpenAI-compatible fake server."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

pytest.importorskip("langchain_openai")

from adapter_fixtures import PAGING
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from lc_helpers import get_weather, seeded_store

from copage.adapters.langchain import CopageMiddleware
from copage.llm.fake_server import FakeServer, Reply


def test_chat_openai_gets_the_paged_view_and_recalls() -> None:
    store = seeded_store("t5")
    script = deque([Reply(tool_calls=[("recall", {"page": "p3"})]),
                    Reply(text="Bring your insurance card.")])
    with FakeServer(lambda _body: script.popleft()) as up:
        model = ChatOpenAI(model="fake-model", base_url=up.url, api_key="sk-test",
                           max_retries=0)
        agent = create_agent(model, tools=[get_weather],
                             middleware=[CopageMiddleware(store, recall_mode="tool", **PAGING)])
        out = agent.invoke({"messages": [HumanMessage("What should I bring to the dentist?")]},
                           {"configurable": {"thread_id": "t5"}})
    first, second = up.received
    names = [t["function"]["name"] for t in first["tools"]]
    assert names == ["get_weather", "recall"]
    msgs: list[dict[str, Any]] = first["messages"]
    assert msgs[0]["role"] == "system" and "[p3: 14 November" in msgs[0]["content"]
    sent = "\n".join(str(m.get("content")) for m in msgs)
    assert "insurance card" not in sent and "Biscuit it is." in sent
    assert msgs[-1] == {"role": "user", "content": "What should I bring to the dentist?"}
    tool_msgs = [m for m in second["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 1 and "insurance card" in tool_msgs[0]["content"]
    assert second["messages"][-2]["tool_calls"][0]["function"]["name"] == "recall"
    assert out["messages"][-1].content == "Bring your insurance card."
    assert [type(m).__name__ for m in out["messages"]] == ["HumanMessage", "AIMessage"]


@pytest.mark.parametrize("checkpointer", [False, True])
def test_every_system_message_of_the_state_reaches_the_model(checkpointer: bool) -> None:
    """System messages in the agent's messages (the date, retrieved context, a reminder
    later on) all reach the model, in order, after the agent's system prompt, as through
    the proxy: the one rule ``copage.session.prompts.join_system`` (a later one replaced
    the earlier ones, which the model then never saw)."""
    from langchain_core.messages import AIMessage, SystemMessage
    from langgraph.checkpoint.memory import InMemorySaver

    with FakeServer() as up:
        model = ChatOpenAI(model="fake-model", base_url=up.url, api_key="sk-test",
                           max_retries=0)
        memory = CopageMiddleware()
        agent = create_agent(model, middleware=[memory], system_prompt="You are Ada.",
                             checkpointer=InMemorySaver() if checkpointer else None)
        cfg = {"configurable": {"thread_id": "sys"}}
        first = [SystemMessage("Today is Monday."), HumanMessage("hi")]
        out = agent.invoke({"messages": first}, cfg)
        assert up.received[-1]["messages"][0] == {
            "role": "system", "content": "You are Ada.\n\nToday is Monday."}
        later = [SystemMessage("Be brief."), HumanMessage("and then?")]
        history = [] if checkpointer else [*first, AIMessage(out["messages"][-1].text)]
        agent.invoke({"messages": history + later}, cfg)
    assert up.received[-1]["messages"][0] == {
        "role": "system", "content": "You are Ada.\n\nToday is Monday.\n\nBe brief."}
    assert [m["role"] for m in up.received[-1]["messages"][1:]] == [
        "user", "assistant", "user"]
    mem = memory.memory("sys")
    assert mem.system == "Today is Monday.\n\nBe brief."
    assert [(t.role, t.text) for t in mem.turns] == [
        ("user", "hi"), ("assistant", "echo: hi"), ("user", "and then?"),
        ("assistant", "echo: and then?")]


def test_a_system_message_that_changes_each_call_is_the_one_pinned() -> None:
    """An app that resends its history with the date or retrieved context in its first
    system message gets the latest one to the model, as through the proxy (the stored
    one stayed: only system messages after the stored turns were read)."""
    from langchain_core.messages import AIMessage, SystemMessage

    with FakeServer() as up:
        model = ChatOpenAI(model="fake-model", base_url=up.url, api_key="sk-test",
                           max_retries=0)
        memory = CopageMiddleware()
        agent = create_agent(model, middleware=[memory])
        cfg = {"configurable": {"thread_id": "today"}}
        out = agent.invoke({"messages": [SystemMessage("Today is Monday."),
                                         HumanMessage("hi")]}, cfg)
        agent.invoke({"messages": [SystemMessage("Today is Tuesday."), HumanMessage("hi"),
                                   AIMessage(out["messages"][-1].text),
                                   HumanMessage("and then?")]}, cfg)
    assert up.received[-1]["messages"][0] == {"role": "system", "content": "Today is Tuesday."}
    mem = memory.memory("today")
    assert mem.system == "Today is Tuesday."
    assert [(t.role, t.text) for t in mem.turns] == [
        ("user", "hi"), ("assistant", "echo: hi"), ("user", "and then?"),
        ("assistant", "echo: and then?")]
