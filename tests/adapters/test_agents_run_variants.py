"""``CopageSession.run_streamed`` and ``run_sync``: as ``session.run``, a run the model
refuses for its window is paged down and made again (the SDK's Runner, a loopback
server that refuses as llama.cpp does, streamed over server-sent events)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, OpenAIChatCompletionsModel, set_tracing_disabled
from openai import AsyncOpenAI

from copage.adapters.agents import CopageSession
from copage.llm.fake_server import FakeServer, Reply

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session"))
from test_overflow import FACT, WINDOW, model_tokens, small_window

set_tracing_disabled(True)  # no trace export: tests are offline
QUESTION = "Where does my sister live?"


def _agent(url: str) -> Agent:
    model = OpenAIChatCompletionsModel(
        model="fake-model", openai_client=AsyncOpenAI(base_url=url, api_key="sk-test",
                                                      max_retries=0))
    return Agent(name="assistant", instructions="You are a helpful assistant.", model=model)


def _long_chat() -> list[Any]:
    items: list[Any] = [{"role": "user", "content": FACT}]
    for i in range(200):
        items += [{"type": "message", "id": f"m{i}", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": f"Sure, {i}.", "annotations": []}]},
                  {"role": "user", "content": f"Small talk {i}: the weather, the trains, lunch."}]
    return items


async def _streamed(session: CopageSession, agent: Agent, text: str) -> tuple[str, str, int]:
    """One streamed run: (the text streamed, final_output, attempts)."""
    run = session.run_streamed(agent, text)
    deltas = [e.data.delta async for e in run.stream_events()
              if e.type == "raw_response_event" and e.data.type == "response.output_text.delta"]
    return "".join(deltas), str(run.final_output), run.attempts


async def test_run_streamed_pages_down_when_the_model_refuses_and_streams_the_answer() -> None:
    session = CopageSession("streamed", dense=None)  # the defaults: not paged at first
    await session.add_items(_long_chat())
    stored = len(_long_chat())
    with FakeServer(small_window) as up:
        agent = _agent(up.url)
        streamed, final, attempts = await _streamed(session, agent, QUESTION)
        assert streamed == final == "Ana lives in Porto." and attempts == 2
        assert all(b.get("stream") for b in up.received)
        sizes = [model_tokens(b) for b in up.received]
        assert len(sizes) == 2 and sizes[0] > WINDOW >= sizes[1]  # refused, then it fitted
        mem = session.memory()
        assert mem is not None and mem.evicted
        assert [t.text for t in mem.turns[stored:]] == [QUESTION, "Ana lives in Porto."]
        for i in range(12):  # the window is remembered: later runs are paged, never refused
            news = f"News {i}: " + "the council met about the bridge and the tram line. " * 6
            assert (await _streamed(session, agent, news))[2] == 1
        assert sum(model_tokens(b) > WINDOW for b in up.received) == 1
        assert len(up.received) == 14
    mem = session.memory()
    assert mem is not None and len(mem.turns) == stored + 2 + 24


async def test_run_streamed_raises_other_errors_unchanged() -> None:
    session = CopageSession("streamed-bad", dense=None)
    with FakeServer(lambda _b: Reply(status=400, error="temperature must be <= 2")) as up:
        run = session.run_streamed(_agent(up.url), "Hello?")
        with pytest.raises(Exception, match="temperature"):
            async for _ in run.stream_events():
                pass
        assert len(up.received) == 1 and run.attempts == 1
    mem = session.memory()
    assert mem is not None and [t.text for t in mem.turns] == ["Hello?"]  # as the SDK stores


async def test_a_retry_is_given_the_input_only_when_the_sdk_did_not_store_it() -> None:
    """The input of the run made again: none when the session stored a batch since the
    refused attempt began (the SDK stored the input), else the input again."""
    session = CopageSession("streamed-input", dense=None)
    await session.add_items(_long_chat())
    assert session.input_again("again", session.stored_batches) == "again"
    assert session.input_again("again", session.stored_batches - 1) == []


def test_run_sync_pages_down_when_the_model_refuses() -> None:
    session = CopageSession("sync", dense=None)
    asyncio.run(session.add_items(_long_chat()))
    with FakeServer(small_window) as up:
        result = session.run_sync(_agent(up.url), QUESTION)
        assert result.final_output == "Ana lives in Porto."
        sizes = [model_tokens(b) for b in up.received]
        assert len(sizes) == 2 and sizes[0] > WINDOW >= sizes[1]
    mem = session.memory()
    assert mem is not None and [t.text for t in mem.turns[-2:]] == [QUESTION,
                                                                    "Ana lives in Porto."]
