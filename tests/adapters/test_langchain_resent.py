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
from copage.stores.inmemory import MemoryStore

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


# --------------------------------------------------------------- what is a continuation
def _stored(pairs: list[tuple[str, str]]) -> PagedMemory:
    mem = PagedMemory(boundary="fixed_4")
    for role, text in pairs:
        mem.add(role, text)
    return mem


def _fresh(pairs: list[tuple[str, str]]) -> list[Any]:
    """Messages as a caller resending plain dicts gets them: fresh objects, new ids."""
    import uuid

    return [(HumanMessage if r == "user" else AIMessage)(content=t, id=str(uuid.uuid4()))
            for r, t in pairs]


HISTORY = [("user", "one"), ("assistant", "a0"), ("user", "two"), ("assistant", "a1")]


def _new_texts(mem: PagedMemory, sent: list[Any]) -> list[str]:
    from copage.adapters.langchain.history import unstored

    return [t.text for t in unstored(mem, sent)]


def test_the_resent_history_plus_a_question_adds_the_question() -> None:
    assert _new_texts(_stored(HISTORY), _fresh([*HISTORY, ("user", "three")])) == ["three"]
    assert _new_texts(_stored(HISTORY), _fresh(HISTORY)) == []


@pytest.mark.parametrize("sent", [
    [("user", "ONE, edited"), *HISTORY[1:], ("user", "three")],  # differs early, same tail
    [*HISTORY[:3], ("assistant", "a1, edited"), ("user", "three")],  # the last stored turn
    [HISTORY[0], ("user", "a0"), *HISTORY[2:], ("user", "three")],  # a role changed
    [*HISTORY[:2], ("user", "three")],  # shorter than the stored history
    [*HISTORY[2:], ("user", "three")],  # the stored tail alone, at another position
], ids=["edited-early", "edited-last", "role", "shorter", "tail-only"])
def test_a_history_that_differs_is_not_a_continuation(sent: list[tuple[str, str]]) -> None:
    # not recognised: every message of unknown id is new (docs/langchain.md), so the
    # messages that differ are among them, not only the question
    texts = _new_texts(_stored(HISTORY), _fresh(sent))
    assert texts == [t for _r, t in sent]


def test_tool_calls_and_system_messages_in_a_resent_history() -> None:
    from langchain_core.messages import SystemMessage, ToolMessage

    from copage.adapters.langchain.convert import to_turn

    calls = [{"name": "get_weather", "args": {"city": "Lisbon"}, "id": "c1",
              "type": "tool_call"}]
    history = [HumanMessage("weather?", id="1"), AIMessage("", tool_calls=calls, id="2"),
               ToolMessage("Sunny.", tool_call_id="c1", id="3"), AIMessage("Sunny.", id="4")]
    mem = PagedMemory(boundary="fixed_4")
    for m in history:
        role, text, meta = to_turn(m)
        mem.add(role, text, **meta)

    def resent(*extra: Any) -> list[Any]:
        return [m.model_copy(update={"id": f"new-{m.id}"}) for m in history] + list(extra)

    q = HumanMessage("and tomorrow?", id="q")
    assert _new_texts(mem, resent(q)) == ["and tomorrow?"]
    assert _new_texts(mem, [SystemMessage("be brief", id="s"), *resent(q)]) == [
        "and tomorrow?"]
    other = [{**calls[0], "args": {"city": "Porto"}}]
    changed = resent(q)
    changed[1] = AIMessage("", tool_calls=other, id="x")  # another call: not the same history
    assert len(_new_texts(mem, changed)) == 5


def test_the_quick_comparison_is_the_canonical_one() -> None:
    from langchain_core.messages import AIMessageChunk, ToolMessage

    from copage.adapters.langchain.convert import to_turn
    from copage.adapters.langchain.history import of_message, of_turn, same
    from copage.core.types import ToolCall, Turn

    calls = [{"name": "f", "args": {"a": 1}, "id": "c1", "type": "tool_call"}]
    messages = [HumanMessage("hi", id="1"), AIMessage("hi", id="2"),
                AIMessage("", tool_calls=calls, id="3"), AIMessageChunk(content="hi", id="4"),
                ToolMessage("hi", tool_call_id="c1", id="5"),
                HumanMessage([{"type": "text", "text": "hi"}], id="6")]
    turns = [Turn("t1", "user", "hi"), Turn("t2", "assistant", "hi"),
             Turn("t3", "assistant", "", tool_calls=(ToolCall("c1", "f", '{"a": 1}'),)),
             Turn("t4", "tool", "hi", tool_call_id="c1"), Turn("t5", "assistant", ""),
             *(Turn(f"s{i}", *to_turn(m)[:2], tool_calls=tuple(to_turn(m).meta.get(
                 "tool_calls") or ()), tool_call_id=to_turn(m).meta.get("tool_call_id"))
               for i, m in enumerate(messages))]
    for m in messages:
        for t in turns:
            assert same(m, t) == (of_message(m) == of_turn(t)), (m, t)


def test_the_view_of_a_resent_history_holds_the_callers_own_messages() -> None:
    """Recognised by content, the resent messages stand where their turns do: the model
    gets the caller's objects (content blocks kept), not messages rebuilt from text."""
    blocks = [{"type": "text", "text": "my code is"}, {"type": "text", "text": " 4471"}]
    mw = CopageMiddleware(boundary="fixed_4")
    model = ToolCallingFake(responses=[AIMessage(content="noted"), AIMessage(content="ok")])
    agent = create_agent(model, tools=[], middleware=[mw])
    history: list[Any] = [{"role": "user", "content": blocks}]
    out = agent.invoke({"messages": history}, CONFIG)
    history += [{"role": "assistant", "content": "noted"}, {"role": "user", "content": "ok?"}]
    agent.invoke({"messages": history}, CONFIG)  # fresh objects, new ids
    first = model.seen[-1][0]
    assert first.content == blocks and first.id != out["messages"][0].id
    assert [t.text for t in mw.memory("t").turns] == ["my code is 4471", "noted", "ok?", "ok"]


@pytest.mark.parametrize("seed", range(40))
def test_the_bulk_comparison_of_a_history_is_the_canonical_one(seed: int) -> None:
    """``_all_same`` (the pairs compared with map over whole lists) against comparing
    every pair's canonical form, on random histories with tool calls, tool results,
    content blocks, chunks and system messages, equal or changed at one place."""
    import random

    from langchain_core.messages import AIMessageChunk, SystemMessage, ToolMessage

    from copage.adapters.langchain.convert import to_turn
    from copage.adapters.langchain.history import _all_same, of_message, of_turn
    from copage.core.types import ToolCall, Turn

    rng = random.Random(seed)
    words = ["hi", "yo", "", "Hi", "hi "]

    def message(i: int) -> Any:
        text = rng.choice(words)
        calls = [{"name": "f", "args": {"a": rng.randint(0, 1)}, "id": f"c{rng.randint(0, 1)}",
                  "type": "tool_call"}]
        return rng.choice([
            lambda: HumanMessage(text, id=str(i)), lambda: AIMessage(text, id=str(i)),
            lambda: AIMessage(text, tool_calls=calls, id=str(i)),
            lambda: AIMessageChunk(content=text, id=str(i)),
            lambda: ToolMessage(text, tool_call_id=f"c{rng.randint(0, 1)}", id=str(i)),
            lambda: SystemMessage(text, id=str(i)),
            lambda: HumanMessage([{"type": "text", "text": text}], id=str(i))])()

    def turn(m: Any, i: int) -> Turn:
        role, text, meta = to_turn(m)
        return Turn(f"t{i}", role, text, tool_calls=tuple(meta.get("tool_calls") or ()),
                    tool_call_id=meta.get("tool_call_id"))

    for _ in range(30):
        n = rng.randint(0, 12)
        messages = [message(i) for i in range(n)]
        turns = [turn(m, i) for i, m in enumerate(messages)]
        if n and rng.random() < 0.6:  # one place changed: the message, or the turn
            i = rng.randrange(n)
            if rng.random() < 0.5:
                messages[i] = message(i)
            else:
                turns[i] = rng.choice([turn(message(i), i), Turn(f"t{i}", "tool", "hi"),
                                       Turn(f"t{i}", "assistant", "hi",
                                            tool_calls=(ToolCall("c1", "f", "{}"),))])
        want = all(of_message(m) == of_turn(t) for m, t in zip(messages, turns, strict=True))
        assert _all_same(messages, turns) == want
