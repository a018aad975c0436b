"""Without a checkpointer a caller resends its history; copage stores each message once."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("langchain")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from lc_helpers import ToolCallingFake

from copage import PagedMemory
from copage.adapters.langchain import CopageMiddleware
from copage.stores.memory import MemoryStore

CONFIG = {"configurable": {"thread_id": "t"}}


def _chat(mw: CopageMiddleware, questions: list[str], *, as_objects: bool = False,
          history: list[Any] | None = None) -> list[Any]:
    """Ask each question, resending the whole history each time (no checkpointer)."""
    model = ToolCallingFake(responses=[AIMessage(content=f"answer {i}")
                                       for i in range(len(questions))])
    agent = create_agent(model, tools=[], middleware=[mw])
    sent: list[Any] = list(history or [])
    for q in questions:
        sent.append({"role": "user", "content": q})
        out = agent.invoke({"messages": sent}, CONFIG)
        reply = out["messages"][-1]
        # a client that keeps plain dicts (fresh ids every call), or the returned objects
        sent = list(out["messages"]) if as_objects else [
            *sent, {"role": "assistant", "content": str(reply.content)}]
    return sent


@pytest.mark.parametrize("as_objects", [False, True])
def test_a_resent_history_is_stored_once(as_objects: bool) -> None:
    mw = CopageMiddleware(boundary="fixed_4")
    _chat(mw, ["one", "two", "three"], as_objects=as_objects)
    turns = mw.memory("t").turns
    assert [(t.role, t.text) for t in turns] == [
        ("user", "one"), ("assistant", "answer 0"), ("user", "two"), ("assistant", "answer 1"),
        ("user", "three"), ("assistant", "answer 2")]


def test_recognised_across_a_restart_and_for_turns_stored_without_the_middleware() -> None:
    store = MemoryStore()
    seeded = PagedMemory(store=store, conversation_id="t", boundary="fixed_4")
    for role, text in [("user", "hi"), ("assistant", "hello")]:
        seeded.add(role, text)
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    sent = _chat(CopageMiddleware(store, boundary="fixed_4"), ["two"], history=history)
    _chat(CopageMiddleware(store, boundary="fixed_4"), ["three"], history=sent)  # a restart
    texts = [t.text for t in PagedMemory(store=store, conversation_id="t", create=False).turns]
    assert texts == ["hi", "hello", "two", "answer 0", "three", "answer 0"]


def test_a_caller_sending_only_the_new_message_is_stored_in_full() -> None:
    mw = CopageMiddleware(boundary="fixed_4")
    model = ToolCallingFake(responses=[AIMessage(content="a"), AIMessage(content="b")])
    agent = create_agent(model, tools=[], middleware=[mw])
    agent.invoke({"messages": [HumanMessage("one")]}, CONFIG)
    agent.invoke({"messages": [HumanMessage("two")]}, CONFIG)
    assert [t.text for t in mw.memory("t").turns] == ["one", "a", "two", "b"]


def test_the_quick_key_is_the_stored_key() -> None:
    from langchain_core.messages import SystemMessage, ToolMessage

    from copage.adapters.langchain.convert import to_turn
    from copage.adapters.langchain.history import of_args, of_message

    calls = [{"name": "f", "args": {"b": 1, "a": "x"}, "id": "c1", "type": "tool_call"}]
    for m in [HumanMessage("hi", id="1"), AIMessage("yo", id="2"),
              AIMessage("", tool_calls=calls, id="3"),
              ToolMessage("out", tool_call_id="c1", id="4"), SystemMessage("sys", id="5"),
              HumanMessage([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                           id="6")]:
        assert of_message(m) == of_args(to_turn(m)), m
