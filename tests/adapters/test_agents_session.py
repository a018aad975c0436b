"""CopageSession with the OpenAI Agents SDK's Runner against a loopback fake server."""

from __future__ import annotations

from collections import deque
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

import dense_chat
from adapter_fixtures import PAGING, TURNS
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    SessionSettings,
    function_tool,
    set_tracing_disabled,
)
from agents.memory import Session
from openai import AsyncOpenAI

from copage import PagedMemory, PagerConfig
from copage.adapters.agents import CopageSession
from copage.core.dense_rank import DenseRanker
from copage.llm.fake_server import FakeServer, Reply
from copage.session.speculate import FILL_HEADER

set_tracing_disabled(True)  # no trace export: tests are offline


def _history() -> list[Any]:
    out: list[Any] = []
    for i, (role, text) in enumerate(TURNS):
        if role == "user":
            out.append({"role": "user", "content": text})
        else:
            out.append({"type": "message", "id": f"msg_{i}", "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]})
    return out


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


def _agent(url: str, session: CopageSession) -> Agent:
    model = OpenAIChatCompletionsModel(
        model="fake-model", openai_client=AsyncOpenAI(base_url=url, api_key="sk-test",
                                                      max_retries=0))
    return Agent(name="assistant", instructions="You are a helpful assistant.", model=model,
                 tools=[get_weather, session.recall_tool()])


def _text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content")) for m in messages)


def test_is_a_session() -> None:
    assert isinstance(CopageSession("s"), Session)


async def test_runner_gets_the_paged_view_and_recalls(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 's.db'}"
    session = CopageSession("alice", store, **PAGING)
    await session.add_items(_history())
    script = deque([Reply(tool_calls=[("recall", {"page": "p3"})]),
                    Reply(text="Bring your insurance card.")])
    with FakeServer(lambda _body: script.popleft()) as up:
        result = await Runner.run(_agent(up.url, session), "What should I bring to the dentist?",
                                  session=session)
    assert result.final_output == "Bring your insurance card."
    first, second = up.received
    assert [t["function"]["name"] for t in first["tools"]] == ["get_weather", "recall"]
    msgs = first["messages"]
    assert msgs[0] == {"role": "system", "content": "You are a helpful assistant."}
    assert msgs[1]["role"] == "system" and "[p3: 14 November" in msgs[1]["content"]  # the bookmarks item
    assert "insurance card" not in _text(msgs) and "Biscuit it is." in _text(msgs)
    assert msgs[-1] == {"role": "user", "content": "What should I bring to the dentist?"}
    tool_msgs = [m for m in second["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 1 and "insurance card" in tool_msgs[0]["content"]

    # The recall exchange is not stored; the question and answer are; p3 is resident.
    mem = session.memory()
    assert mem is not None
    assert [t.role for t in mem.turns[-2:]] == ["user", "assistant"]
    assert all(t.role != "tool" and not t.tool_calls for t in mem.turns)
    assert "p3" in mem.resident
    # A new session object (a restart) on the same store gives the same view.
    items = await CopageSession("alice", store).get_items()
    assert "insurance card" in str(items) and "[p3:14" not in str(items[0])
    assert items[-1]["content"][0]["text"] == "Bring your insurance card."


async def test_the_recall_tool_is_offered_only_while_a_page_is_evicted() -> None:
    """At the defaults a short chat is not paged: the model gets the agent's own tools
    and no ``recall``; once pages are evicted it gets ``recall`` too."""
    short = CopageSession("carol")
    with FakeServer(lambda _body: Reply(text="Hello.")) as up:
        await Runner.run(_agent(up.url, short), "Hi there, how are you?", session=short)
        paged = CopageSession("dave", **PAGING)
        await paged.add_items(_history())
        await Runner.run(_agent(up.url, paged), "What should I bring to the dentist?",
                         session=paged)
    alone, evicted = up.received
    assert [t["function"]["name"] for t in alone["tools"]] == ["get_weather"]
    assert [t["function"]["name"] for t in evicted["tools"]] == ["get_weather", "recall"]


async def test_app_tools_are_stored_with_their_outputs() -> None:
    session = CopageSession("bob", **PAGING)
    script = deque([Reply(tool_calls=[("get_weather", {"city": "Lisbon"})]),
                    Reply(text="Sunny.")])
    with FakeServer(lambda _body: script.popleft()) as up:
        await Runner.run(_agent(up.url, session), "Weather in Lisbon?", session=session)
    items = await session.get_items()
    kinds = [i.get("type", "message") for i in items]
    assert kinds == ["message", "function_call", "function_call_output", "message"]
    assert items[2]["output"] == "Sunny in Lisbon."


async def test_get_items_limit_pop_and_clear(tmp_path: Path) -> None:
    session = CopageSession("carol", f"sqlite:///{tmp_path / 's.db'}", **PAGING)
    assert await session.get_items() == [] and await session.pop_item() is None
    await session.add_items(_history())
    view = await session.get_items()
    assert view[0]["role"] == "system" and "[p1:" in view[0]["content"]
    assert len(view) == 1 + 8  # bookmarks + two resident pages of 4 items
    latest = await session.get_items(limit=3)  # at most 3 items: bookmarks, the latest two
    assert latest[0] == view[0] and latest[1:] == view[-2:]
    assert await session.get_items(limit=1) == view[-1:]
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=100) == view
    limited = CopageSession("carol", session.store, session_settings=SessionSettings(limit=2))
    assert await limited.get_items() == [view[0], view[-1]]  # the SDK's setting applies
    with pytest.raises(ValueError, match="limit"):
        await session.get_items(limit=-1)

    popped = await session.pop_item()
    assert popped is not None and popped["content"][0]["text"] == "Biscuit it is."
    after = await session.get_items()
    assert after[-1] == {"role": "user", "content": "I like Biscuit."}
    mem = session.memory()
    assert mem is not None and len(mem.turns) == len(TURNS) - 1
    # the popped turn had closed a page in this session's latest commit: taken back
    assert mem.conversation_id == "carol"
    version = mem.version
    assert (await session.pop_item())["content"] == "I like Biscuit."
    again = session.memory()  # this one was in the open page: one commit, same id
    assert again is not None and again.conversation_id == "carol"
    assert again.version == version + 1 and len(again.turns) == len(TURNS) - 2
    # another process (no record of the commit that closed a page) rebuilds instead
    await session.add_items([{"role": "user", "content": "I like Biscuit."}, popped])
    other = CopageSession("carol", session.store, **PAGING)
    assert (await other.pop_item()) == popped
    mem = other.memory()
    assert mem is not None and mem.conversation_id == "carol~pop"
    assert len(mem.turns) == len(TURNS) - 1
    assert (await session.get_items()) == after  # the first session follows the twin

    await session.clear_session()
    assert await session.get_items() == []
    assert not session.store.exists("carol") and not session.store.exists("carol~pop")


async def test_a_pop_killed_midway_keeps_the_longer_copy() -> None:
    session = CopageSession("dan", **PAGING)
    await session.add_items(_history())
    # What a kill between "copy written" and "original deleted" leaves behind:
    twin = CopageSession("dan~pop", session.store, **PAGING)
    await twin.add_items(_history()[:-1])
    items = await session.get_items()
    assert items[-1]["content"][0]["text"] == "Biscuit it is."  # the original, unpopped
    assert not session.store.exists("dan~pop")


async def test_reasoning_items_travel_with_the_next_item() -> None:
    session = CopageSession("eve", session_settings=SessionSettings(limit=10), **PAGING)
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": []}
    call = {"type": "function_call", "call_id": "c1", "name": "get_weather",
            "arguments": "{\"city\": \"Oslo\"}"}
    await session.add_items([{"role": "user", "content": "Oslo?"}, reasoning, call,
                             {"type": "function_call_output", "call_id": "c1", "output": "Rain"}])
    items = await session.get_items()
    assert items[1:3] == [reasoning, call]
    mem = session.memory()
    assert mem is not None and len(mem.turns) == 3  # reasoning is not a turn of its own


async def test_every_run_is_metered_as_the_sdk_is_given_it(tmp_path: Path) -> None:
    """``stats().prompt_cache`` counts each run's request (its view), before any page is
    evicted as after, as the engine meters the same conversation's context, and the
    count is stored with the conversation (the first run finds no conversation yet:
    nothing to meter)."""
    session = CopageSession("erin", f"sqlite:///{tmp_path / 's.db'}", **PAGING)
    ref = PagedMemory(config=PagerConfig(**PAGING))  # the engine, metering its context()
    asked = [text for role, text in TURNS if role == "user"] * 2
    with FakeServer(lambda _body: Reply(text="Noted.")) as up:
        agent = _agent(up.url, session)
        for n, question in enumerate(asked, 1):
            await Runner.run(agent, question, session=session)
            if n > 1:
                ref.context()
            ref.add("user", question)
            ref.add("assistant", "Noted.")
            mem = session.memory()
            assert mem is not None
            pc = mem.stats().prompt_cache
            assert pc is not None and pc["requests"] == n - 1  # stored by its add_items
            assert pc == ref.stats().prompt_cache
    assert mem.evicted and pc["prefix_share_median"] is not None
    # a limited view is metered as given: the bookmarks and the kept items' turns
    sent = []
    for limit in (None, 3):
        other = CopageSession("erin", session.store, **PAGING)  # nothing cached
        view = await other.get_items(limit=limit)
        await other.add_items([{"role": "user", "content": "ok"}])  # stores the meter
        after = other.memory()
        assert after is not None
        got = after.stats().prompt_cache
        assert got is not None
        sent.append(got["prompt_tokens"] - pc["prompt_tokens"])
        pc = got
    assert len(view) == 3 and 0 < sent[1] < sent[0]
    assert await other.get_items(limit=0) == []  # nothing given: not a request
    await other.add_items([{"role": "user", "content": "ok"}])
    after = other.memory()
    assert after is not None and after.stats().prompt_cache == pc


async def test_run_config_shows_the_speculative_fill_on_every_call_of_the_run(
        tmp_path: Path) -> None:
    """``run_config()``: the evicted page matching the question is shown (PagedChat's
    speculative step) on each model call of the run, just before the question; it is
    never stored, recorded once as a ``speculative`` event, and metered as sent."""
    session = CopageSession("frank", f"sqlite:///{tmp_path / 's.db'}", **PAGING)
    await session.add_items(_history())
    script = deque([Reply(tool_calls=[("get_weather", {"city": "Lisbon"})]),
                    Reply(text="Bring your insurance card.")])
    question = "What should I bring to the dentist appointment with Dr Okafor?"
    with FakeServer(lambda _body: script.popleft()) as up:
        await Runner.run(_agent(up.url, session), question, session=session,
                         run_config=session.run_config())
    for body in up.received:  # both calls of the run
        msgs = body["messages"]
        fills = [i for i, m in enumerate(msgs) if FILL_HEADER in str(m.get("content"))]
        assert len(fills) == 1, msgs
        fill, asked = msgs[fills[0]], msgs[fills[0] + 1]
        assert fill["role"] == "user" and "insurance card" in fill["content"]
        assert "[p3]" in fill["content"] or "p3" in fill["content"]
        assert asked == {"role": "user", "content": question}
    mem = session.memory()
    assert mem is not None
    assert not any(FILL_HEADER in t.text for t in mem.turns)  # the fill is not stored
    assert [t.text for t in mem.turns if t.role == "user"][-1] == question
    events = [e for e in mem.store.events(mem.conversation_id) if e.kind == "speculative"]
    assert len(events) == 1 and "p3" in events[0].detail["paged_in"]
    pc = mem.stats().prompt_cache
    assert pc is not None and pc["requests"] == 1  # the run's view (first run: unfilled)

    # the next run's request is metered with its fill, as it is sent
    before = pc["prompt_tokens"]
    script.extend([Reply(text="Tram 28.")])
    with FakeServer(lambda _body: script.popleft()) as up:
        await Runner.run(_agent(up.url, session), "Which tram in Lisbon again, for my trip?",
                         session=session, run_config=session.run_config())
    (body,) = up.received
    (fill,) = [m for m in body["messages"] if FILL_HEADER in str(m["content"])]
    mem = session.memory()
    assert mem is not None
    pc = mem.stats().prompt_cache
    assert pc is not None and pc["requests"] == 2
    fill_tokens = mem.pager.prompt_meter.part_tokens(fill)
    view_tokens = sum(mem.pager.prompt_meter.part_tokens(m) for m in mem.context().messages)
    assert pc["prompt_tokens"] - before > fill_tokens + view_tokens // 2


@pytest.mark.parametrize("dense", [False, True])
async def test_the_dense_channel_brings_back_a_fact_asked_in_other_words(dense: bool) -> None:
    """``dense=``: the run's fill (``run_config()``) offers the best passage by meaning
    first, so the evicted fact reaches the model though the question shares no word with
    it; BM25 alone cannot."""
    ranker = DenseRanker(dense_chat.ConceptVectors()) if dense else None
    session = CopageSession("d", dense_chat.seeded("d"), dense=ranker, **dense_chat.PAGING)
    assert session.speculator.dense is ranker
    script = deque([Reply(text="Better skip the satay.")])
    with FakeServer(lambda _body: script.popleft()) as up:
        await Runner.run(_agent(up.url, session), dense_chat.QUESTION, session=session,
                         run_config=session.run_config())
    (body,) = up.received
    sent = _text(body["messages"])
    assert dense_chat.QUESTION in sent
    assert (dense_chat.FACT_SHOWN in sent) is dense


async def test_run_pages_down_when_the_model_refuses_the_request_for_its_window() -> None:
    """``session.run``: the model refuses the run's request for its window (as llama.cpp
    does, through the real HTTP path); the conversation is paged down and the run made
    again on the input the SDK stored, and answered; everything is stored once.
    The window is remembered: later runs that would not fit it are paged down by
    get_items, never refused again."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session"))
    from test_overflow import FACT, WINDOW, model_tokens, small_window

    session = CopageSession("small", dense=None)  # the defaults: not paged at first
    items: list[Any] = [{"role": "user", "content": FACT}]
    for i in range(200):
        items += [{"type": "message", "id": f"m{i}", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": f"Sure, {i}.", "annotations": []}]},
                  {"role": "user", "content": f"Small talk {i}: the weather, the trains, lunch."}]
    await session.add_items(items)
    stored = len(items)
    with FakeServer(small_window) as up:
        agent = _agent(up.url, session)
        result = await session.run(agent, "Where does my sister live?")
        assert result.final_output == "Ana lives in Porto."
        sizes = [model_tokens(b) for b in up.received]
        assert len(sizes) == 2 and sizes[0] > WINDOW >= sizes[1]  # refused, then it fitted
        mem = session.memory()
        assert mem is not None and mem.evicted
        assert len(mem.turns) == stored + 2  # the question and the answer, once each
        assert [t.text for t in mem.turns[-2:]] == ["Where does my sister live?",
                                                    "Ana lives in Porto."]
        for i in range(20):  # the chat grows on: several windows' worth
            news = f"News {i}: " + "the council met about the bridge and the tram line. " * 6
            assert (await session.run(agent, news)).final_output == "Ana lives in Porto."
        refused = [b for b in up.received if model_tokens(b) > WINDOW]
        assert len(refused) == 1 and len(up.received) == 22
    mem = session.memory()
    assert mem is not None and len(mem.turns) == stored + 42


async def test_run_raises_other_errors_and_keeps_what_the_sdk_stored() -> None:
    session = CopageSession("bad", dense=None)
    with FakeServer(lambda _b: Reply(status=400, error="temperature must be <= 2")) as up:
        with pytest.raises(Exception, match="temperature"):
            await session.run(_agent(up.url, session), "Hello?")
        assert len(up.received) == 1
    mem = session.memory()
    assert mem is not None and [t.text for t in mem.turns] == ["Hello?"]  # as Runner.run


async def test_run_says_what_to_do_when_nothing_is_left_to_page_down() -> None:
    """A message longer than the window: nothing to evict, so the SDK's error is raised,
    with the budget that would fit named in a note."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session"))
    from test_overflow import small_window

    session = CopageSession("huge", dense=None)
    with FakeServer(small_window) as up:
        with pytest.raises(Exception, match="context size") as info:
            await session.run(_agent(up.url, session), "word " * 4000)
        assert len(up.received) == 1
    assert any("budget_tokens=" in n for n in getattr(info.value, "__notes__", []))
