"""PagedChat.stream: real streaming through the OpenAI adapter, recalls held, rollback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from session_helpers import TOPICS, new_memory

from copage.llm import get_model
from copage.llm.fake_server import FakeReply, FakeServer
from copage.llm.scripted import ScriptedModel
from copage.session import PagedChat, RecallServed, TextDelta, TurnDone

FIXTURES = Path(__file__).parent.parent / "llm" / "fixtures"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def chunk(content: str | None = None, *, tool: dict[str, Any] | None = None,
          finish: str | None = None) -> dict[str, Any]:
    delta: dict[str, Any] = {}
    if content is not None:
        delta["content"] = content
    if tool is not None:
        delta["tool_calls"] = [tool]
    return {"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def text_stream(*pieces: str, delay: float = 0.0) -> FakeReply:
    events: list[Any] = [chunk(p) for p in pieces]
    events += [chunk(finish="stop"), {"id": "s", "object": "chat.completion.chunk", "created": 0,
               "model": "m", "choices": [], "usage": {"prompt_tokens": 40,
               "completion_tokens": len(pieces)}}, "[DONE]"]
    return FakeReply(sse=events, chunk_delay=delay)


async def test_first_delta_arrives_before_the_upstream_has_finished() -> None:
    pieces = ["Peanuts ", "are ", "the ", "problem."]
    with FakeServer(text_stream(*pieces, delay=0.4)) as srv:
        model = get_model(f"openai:m@{srv.url}", max_retries=0)
        chat = PagedChat(new_memory(), model, recall_mode="tool")
        events = []
        done_when_first = None
        async for ev in chat.stream("What can't I eat?"):
            if isinstance(ev, TextDelta) and done_when_first is None:
                done_when_first = srv.completed
            events.append(ev)
    assert done_when_first == 0, "the first delta waited for the whole upstream reply"
    assert [e.text for e in events if isinstance(e, TextDelta)] == pieces
    report = events[-1].report
    assert isinstance(events[-1], TurnDone) and report.answer == "Peanuts are the problem."
    assert srv.received[0]["stream"] is True
    assert chat.memory.turns[-1].text == "Peanuts are the problem."


async def test_recall_tool_call_is_held_served_and_the_next_reply_streamed() -> None:
    with FakeServer(FakeReply(sse=[*fixture("openai_stream_tool_call.json"), "[DONE]"]),
                    text_stream("Tuesday ", "at 9.")) as srv:
        model = get_model(f"openai:gpt-4o-mini@{srv.url}", max_retries=0)
        mem = new_memory()
        events = [ev async for ev in PagedChat(mem, model, recall_mode="tool").stream("When is the dentist?")]
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(texts) == "Let me check.\n\nTuesday at 9."
    assert not any("p3" in t or "recall" in t for t in texts)
    served = [e.record for e in events if isinstance(e, RecallServed)]
    assert [(r.page, r.status) for r in served] == [("p3", "paged_in")]
    assert isinstance(events[-1], TurnDone)
    assert events[-1].report.answer == "Let me check.\n\nTuesday at 9."
    second = srv.received[1]["messages"]
    assert second[-2]["tool_calls"][0]["function"]["name"] == "recall"
    assert TOPICS[2] in second[-1]["content"]
    assert mem.turns[-1].text == "Let me check.\n\nTuesday at 9."


async def test_a_recall_written_as_text_is_never_streamed() -> None:
    with FakeServer(text_stream("REC", "ALL p", "3\n"), text_stream("Tuesday ", "at 9.")) as srv:
        model = get_model(f"openai:m@{srv.url}", max_retries=0)
        events = [ev async for ev in PagedChat(new_memory(), model, recall_mode="tool").stream("dentist?")]
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(texts) == "Tuesday at 9."
    assert [e.record.page for e in events if isinstance(e, RecallServed)] == ["p3"]


async def test_prose_mentioning_recall_streams_once_its_line_is_complete() -> None:
    reply = text_stream("I recall ", "you like tea.\n", "Anything else?")
    with FakeServer(reply) as srv:
        model = get_model(f"openai:m@{srv.url}", max_retries=0)
        events = [ev async for ev in PagedChat(new_memory(), model, recall_mode="tool").stream("hi")]
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert "".join(texts) == "I recall you like tea.\nAnything else?"
    assert texts[0] == "I " and events[-1].report.recalls == ()


async def test_leaving_a_stream_early_stores_nothing() -> None:
    mem = new_memory()
    n = len(mem.turns)
    with FakeServer(text_stream("a ", "b ", "c", delay=0.05)) as srv:
        model = get_model(f"openai:m@{srv.url}", max_retries=0)
        async with PagedChat(mem, model, recall_mode="tool").stream("q") as stream:
            async for _ev in stream:
                break
    assert len(mem.turns) == n and stream.report is None


async def test_a_model_without_streaming_arrives_as_one_delta() -> None:
    model = ScriptedModel().tool_call("recall", {"page": "p1"}).reply("No satay: peanuts.")
    stream = PagedChat(new_memory(), model, recall_mode="tool").stream("What can't I eat?")
    texts = [t async for t in stream.text()]
    assert texts == ["No satay: peanuts."]
    assert stream.report is not None and stream.report.recalled_pages == ("p1",)


async def test_send_and_stream_agree() -> None:
    def script() -> ScriptedModel:
        return ScriptedModel().reply("Let me look.\nRECALL p2").reply("1200 dollars.")

    sent = await PagedChat(new_memory(), script(), recall_mode="tool").send("budget?")
    stream = PagedChat(new_memory(), script(), recall_mode="tool").stream("budget?")
    _ = [ev async for ev in stream]
    assert stream.report is not None
    assert (sent.answer, sent.recalled_pages) == (stream.report.answer,
                                                  stream.report.recalled_pages)
    assert sent.answer == "Let me look.\n\n1200 dollars."


@pytest.mark.parametrize("bad", ["", "   "])
def test_stream_checks_its_input(bad: str) -> None:
    with pytest.raises(ValueError):
        PagedChat(new_memory(), ScriptedModel(), recall_mode="tool").stream(bad)


async def test_text_released_at_the_end_of_a_later_reply_is_set_apart() -> None:
    model = ScriptedModel().reply("Checking.\nRECALL p1").reply("I recall peanuts.")
    report = await PagedChat(new_memory(), model, recall_mode="tool").send("allergy?")
    assert report.answer == "Checking.\n\nI recall peanuts."


async def test_a_bare_page_id_reply_is_never_streamed() -> None:
    with FakeServer(text_stream("p", "3"), text_stream("Peanuts", ".")) as srv:
        model = get_model(f"openai:m@{srv.url}", max_retries=0)
        events = [ev async for ev in PagedChat(new_memory(), model, recall_mode="tool").stream("allergy?")]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Peanuts", "."]
    assert [e.record.page for e in events if isinstance(e, RecallServed)] == ["p3"]
