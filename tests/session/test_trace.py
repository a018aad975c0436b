"""OpenTelemetry traces of PagedChat's turns, read back from the SDK's in-memory exporter."""

from __future__ import annotations

from typing import Any

import pytest
from session_helpers import TOPICS, new_memory

from copage.llm.errors import ModelError
from copage.llm.model_types import ChatRequest, ChatResponse
from copage.llm.scripted import ScriptedModel
from copage.memory import PagedMemory
from copage.session import PagedChat, trace


def by_name(spans: Any, name: str) -> list[Any]:
    return [s for s in spans if s.name == name]


def values(spans: Any) -> list[str]:
    """Every string attribute value of every span (to look for message text)."""
    out: list[str] = []
    for s in spans:
        for v in s.attributes.values():
            out += [str(x) for x in v] if isinstance(v, tuple) else [str(v)]
    return out


def test_off_without_a_tracer_provider() -> None:
    assert not trace.active()
    assert trace.turn("conv") is trace.NULL
    assert trace.NULL.trace_id == ""


async def test_a_recall_turn_is_one_span_with_its_steps(otel_spans: Any) -> None:
    mem = new_memory()
    model = ScriptedModel().tool_call("recall", {"page": "p1"}).reply("No satay: peanuts.")
    question = "What can't I eat?"
    await PagedChat(mem, model, recall_mode="tool").send(question)
    spans = otel_spans.get_finished_spans()
    (turn,) = by_name(spans, "copage.turn")
    assert turn.attributes["copage.conversation_id"] == "conv"
    assert turn.attributes["copage.front_end"] == "library"
    assert turn.attributes["copage.recall_mode"] == "tool"
    assert turn.attributes["copage.turn.stored"] is True
    assert turn.attributes["copage.turn.recalls"] == 1
    children = [s for s in spans if s is not turn]
    assert children and all(s.parent.span_id == turn.context.span_id for s in children)
    assert {s.context.trace_id for s in spans} == {turn.context.trace_id}
    (recall,) = by_name(spans, "copage.recall")
    assert recall.attributes["copage.recall.page"] == "p1"
    assert recall.attributes["copage.recall.status"] == "paged_in"
    assert recall.attributes["copage.recall.evicted"] == ("p5",)
    upstream = by_name(spans, "copage.upstream")
    assert len(upstream) == 2  # the recall call and the answer
    assert [u.attributes["gen_ai.response.finish_reasons"] for u in upstream] == [
        ("tool_calls",), ("stop",)]
    assert upstream[1].attributes["gen_ai.usage.output_tokens"] == 3
    assert all(turn.start_time <= s.start_time <= s.end_time <= turn.end_time for s in children)
    # no message text unless asked
    assert not any(question in v or "satay" in v for v in values(spans))


async def test_the_fill_and_the_evictions_are_spans(otel_spans: Any) -> None:
    mem = PagedMemory(conversation_id="fill", boundary="fixed_2", resident_pages=1)
    chat = PagedChat(mem, ScriptedModel().reply("ok").reply("ok").reply("ok").reply("ok"))
    for topic in TOPICS[:3]:
        await chat.send(topic)
    evicts = by_name(otel_spans.get_finished_spans(), "copage.evict")
    assert evicts, "three turns of two messages, one page resident: pages were evicted"
    assert [p for s in evicts for p in s.attributes["copage.evict.pages"]] == ["p1", "p2"]
    assert all(s.attributes["copage.evict.cause"] in ("user", "assistant") for s in evicts)
    otel_spans.clear()
    await chat.send("Do I have an allergy to peanuts? Remind me.")
    spans = otel_spans.get_finished_spans()
    (fill,) = by_name(spans, "copage.page_in")
    # a question about the speaker's own things: every evicted page fits, the best first
    assert fill.attributes["copage.fill.pages"] == ("p1", "p2")
    assert fill.attributes["copage.fill.best"] == "p1"
    assert fill.attributes["copage.fill.score"] > 0
    assert fill.attributes["copage.fill.tokens"] > 0
    (turn,) = by_name(spans, "copage.turn")
    assert turn.attributes["copage.recall_mode"] == "speculative"
    assert fill.parent.span_id == turn.context.span_id


async def test_text_only_when_asked(otel_spans: Any) -> None:
    trace.configure(content=True)
    try:
        await PagedChat(new_memory(), ScriptedModel().reply("Fine.")).send("How are you?")
    finally:
        trace.configure(content=False)
    (turn,) = by_name(otel_spans.get_finished_spans(), "copage.turn")
    assert turn.attributes["copage.question"] == "How are you?"
    assert turn.attributes["copage.answer"] == "Fine."


async def test_a_failed_turn_ends_its_span_with_the_error(otel_spans: Any) -> None:
    def fail(_request: ChatRequest) -> ChatResponse:
        raise ModelError("scripted", "upstream down")

    mem = new_memory()
    with pytest.raises(ModelError):
        await PagedChat(mem, ScriptedModel().then(fail)).send("Hello?")
    spans = otel_spans.get_finished_spans()
    (turn,) = by_name(spans, "copage.turn")
    assert turn.attributes["copage.turn.stored"] is False
    assert turn.attributes["error.type"] == "ModelError"
    assert turn.status.status_code.name == "ERROR"
    (upstream,) = by_name(spans, "copage.upstream")
    assert upstream.attributes["error.type"] == "ModelError"
