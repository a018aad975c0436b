"""The proxy's use of the one recall engine: streaming events, client tools end the turn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from copage.llm import get_model
from copage.llm.fake_server import FakeReply, FakeServer
from copage.llm.model_types import ChatModel, ChatRequest, StreamEvent, fallback_stream, stream
from copage.memory import PagedMemory
from copage.server.proxy_loop import loop_events, outcome_of
from copage.server.request import ChatCall
from copage.session import ClientToolDelta, LoopEnd, RecallServed, TextDelta

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}}, "required": ["city"]}}}


def memory() -> PagedMemory:
    mem = PagedMemory(boundary="fixed_2", resident_pages=1)
    for i, text in enumerate(["I live in Lisbon.", "Nice.", "I like tea.", "Ok.", "Hi", "Hey"]):
        mem.add("user" if i % 2 == 0 else "assistant", text)
    return mem


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "s", "object": "chat.completion.chunk", "created": 0, "model": "up",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def tool(index: int, name: str | None, args: str, cid: str | None = None) -> dict[str, Any]:
    fn: dict[str, Any] = {"arguments": args}
    if name:
        fn["name"] = name
    out: dict[str, Any] = {"index": index, "function": fn}
    if cid:
        out["id"] = cid
    return {"tool_calls": [out]}


async def test_recall_held_client_call_streamed_through_with_its_own_index() -> None:
    first = FakeReply(sse=[
        chunk(tool(0, "recall", '{"page": ', "c_r")), chunk(tool(0, None, '"p1"}')),
        chunk(tool(1, "get_weather", '{"city": ', "c_w")), chunk(tool(1, None, '"Lisbon"}')),
        chunk({}, "tool_calls"), "[DONE]"])
    mem = memory()
    call = ChatCall(model="up", raw=(), tools=(WEATHER,))
    with FakeServer(first) as srv:
        model = get_model(f"openai:up@{srv.url}", max_retries=0)

        def upstream(m: ChatModel, request: ChatRequest) -> AsyncIterator[StreamEvent]:
            return stream(m, request)

        events = [e async for e in loop_events(mem, model, call, upstream, max_recalls=3)]
    deltas = [e.delta for e in events if isinstance(e, ClientToolDelta)]
    assert [(d.index, d.name, d.arguments) for d in deltas] == [
        (0, "get_weather", '{"city": '), (0, None, '"Lisbon"}')]
    assert [e.record.page for e in events if isinstance(e, RecallServed)] == ["p1"]
    end = events[-1]
    assert isinstance(end, LoopEnd)
    assert [c.name for c in end.outcome.tool_calls] == ["get_weather"]
    assert end.outcome.finish_reason == "tool_calls"
    assert "p1" in mem.resident
    body = srv.received[0]
    assert [t["function"]["name"] for t in body["tools"]] == ["recall", "get_weather"]
    assert body["tool_choice"] == "auto"


async def test_loop_serves_a_text_written_recall_and_returns_the_answer() -> None:
    def reply(text: str) -> FakeReply:
        return FakeReply({"choices": [{"message": {"content": text}, "finish_reason": "stop"}],
                          "model": "up", "usage": {"prompt_tokens": 7, "completion_tokens": 1}})

    mem = memory()
    call = ChatCall(model="up", raw=())
    with FakeServer(reply("<tool_call>\n{\"name\": \"recall\", \"arguments\": {\"page\": \"p1\"}}"
                          "\n</tool_call>"), reply("You live in Lisbon.")) as srv:
        model = get_model(f"openai:up@{srv.url}", max_retries=0)

        def whole(m: ChatModel, request: ChatRequest) -> AsyncIterator[StreamEvent]:
            return fallback_stream(m, request)

        events = [e async for e in loop_events(mem, model, call, whole, max_recalls=3)]
    end = events[-1]
    assert isinstance(end, LoopEnd)
    out = outcome_of(end, model, [0.01, 0.01])
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["You live in Lisbon."]
    assert out.text == "You live in Lisbon." and out.calls == 2
    assert out.prompt_tokens == 14 and out.latencies == [0.01, 0.01]
    assert [r.page for r in out.recalls] == ["p1"]
