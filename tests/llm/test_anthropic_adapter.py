"""The Anthropic adapter driven through the real SDK against a local fake server."""

from __future__ import annotations

import logging

import pytest

from copage.core.types import ToolCall
from copage.llm import (
    AuthError,
    BadResponse,
    ChatRequest,
    EmptyReply,
    UpstreamError,
    get_model,
)
from copage.llm.anthropic_convert import to_anthropic_messages, to_anthropic_tool_choice
from copage.llm.chat_messages import assistant_message, tool_message
from copage.llm.fake_server import FakeReply, FakeServer

from .conftest import RECALL_TOOL, SECRET, Sleeps, fixture


def model(server: FakeServer, sleeps: Sleeps | None = None, **kw: object):  # type: ignore[no-untyped-def]
    return get_model(f"anthropic:claude-haiku-4-5@{server.root}", api_key=SECRET, sleep=sleeps, **kw)


async def test_plain_reply_system_separate() -> None:
    msgs = (
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Thai food ok?"},
    )
    with FakeServer(FakeReply(fixture("anthropic_text.json"))) as srv:
        resp = await model(srv).complete(ChatRequest(msgs, temperature=0.2))
    assert resp.text == "Avoid the satay: it is made with peanuts."
    assert resp.finish_reason == "stop" and resp.logprobs is None
    assert resp.cost_usd == pytest.approx((2000 * 1.0 + 100 * 5.0) / 1e6)
    got = srv.requests[0]
    assert got.path == "/v1/messages"
    # the SDK sends the key as x-api-key (1.x) or a bearer token (2.x)
    assert SECRET in (got.headers.get("x-api-key"), got.headers.get("authorization", "")[7:])
    assert got.body == {
        "model": "claude-haiku-4-5",
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Thai food ok?"}]}],
        "max_tokens": 1024,
        "temperature": 0.2,
    }


async def test_tool_use_roundtrip_and_merged_tool_results() -> None:
    history = (
        {"role": "user", "content": "What am I allergic to?"},
        assistant_message(
            "Checking.",
            [
                ToolCall("toolu_a", "recall", '{"page": "p3"}'),
                ToolCall("toolu_b", "recall", '{"page": "p4"}'),
            ],
        ),
        tool_message("toolu_a", "p3: peanut allergy"),
        tool_message("toolu_b", "p4: budget $40"),
        {"role": "user", "content": "So?"},
    )
    req = ChatRequest(history, tools=(RECALL_TOOL,), tool_choice="required", max_tokens=64)
    with FakeServer(FakeReply(fixture("anthropic_tool_use.json"))) as srv:
        resp = await model(srv).complete(req)
    assert resp.text == "I'll look at the earlier pages."
    assert resp.finish_reason == "tool_calls"
    assert resp.tool_calls == (
        ToolCall("toolu_01A09q90qw90lq917835lq9", "recall", '{"page": "p3"}'),
        ToolCall("toolu_01B77rr1", "recall", '{"page": "p5"}'),
    )
    body = srv.received[0]
    assert body["tools"] == [
        {
            "name": "recall",
            "input_schema": RECALL_TOOL["function"]["parameters"],  # type: ignore[index]
            "description": "Bring an evicted page back into context.",
        }
    ]
    assert body["tool_choice"] == {"type": "any"} and body["max_tokens"] == 64
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What am I allergic to?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_a", "name": "recall", "input": {"page": "p3"}},
                {"type": "tool_use", "id": "toolu_b", "name": "recall", "input": {"page": "p4"},
                 "cache_control": {"type": "ephemeral"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "p3: peanut allergy"},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "p4: budget $40"},
                {"type": "text", "text": "So?"},
            ],
        },
    ]


def test_tool_only_assistant_has_no_empty_text_block() -> None:
    _, msgs = to_anthropic_messages(
        [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "t",
                        "type": "function",
                        "function": {"name": "recall", "arguments": "not json"},
                    }
                ],
            },
        ]
    )
    assert msgs[1]["content"] == [
        {"type": "tool_use", "id": "t", "name": "recall", "input": {"arguments": "not json"},
         "cache_control": {"type": "ephemeral"}}  # the end of the history: a cache breakpoint
    ]


def test_the_history_ends_at_one_cache_breakpoint() -> None:
    """Anthropic caches up to a ``cache_control`` breakpoint: the end of the latest
    assistant message, so the per-turn rest (a speculative fill, the new question) is
    not written to the cache; one breakpoint only; none without an assistant turn."""
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"},
            {"role": "assistant", "content": "d"}, {"role": "user", "content": "FILL"},
            {"role": "user", "content": "q"}]
    _, out = to_anthropic_messages(msgs)
    marked = [(i, j) for i, m in enumerate(out) for j, b in enumerate(m["content"])
              if "cache_control" in b]
    assert marked == [(3, 0)] and out[3]["content"][0] == {
        "type": "text", "text": "d", "cache_control": {"type": "ephemeral"}}
    _, plain = to_anthropic_messages(msgs, cache=False)
    assert not any("cache_control" in b for m in plain for b in m["content"])
    _, first = to_anthropic_messages([{"role": "user", "content": "hi"}])
    assert not any("cache_control" in b for m in first for b in m["content"])


def test_tool_choice_mapping() -> None:
    assert to_anthropic_tool_choice("auto") == {"type": "auto"}
    assert to_anthropic_tool_choice({"type": "function", "function": {"name": "recall"}}) == {
        "type": "tool",
        "name": "recall",
    }
    with pytest.raises(ValueError, match="unknown tool_choice"):
        to_anthropic_tool_choice("sometimes")


async def test_overloaded_529_is_retried(sleeps: Sleeps) -> None:
    over = FakeReply(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        status=529,
    )
    with FakeServer(over, FakeReply(fixture("anthropic_text.json"))) as srv:
        resp = await model(srv, sleeps).complete(ChatRequest(({"role": "user", "content": "x"},)))
    assert resp.text and len(srv.received) == 2 and len(sleeps.delays) == 1


async def test_401_and_key_never_logged(sleeps: Sleeps, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    bad = FakeReply(
        {
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        },
        status=401,
    )
    with (
        FakeServer(bad) as srv,
        pytest.raises(AuthError, match="anthropic: HTTP 401: invalid x-api-key"),
    ):
        await model(srv, sleeps).complete(ChatRequest(({"role": "user", "content": "x"},)))
    assert len(srv.received) == 1 and SECRET not in caplog.text


async def test_empty_content_is_bad_response() -> None:
    empty = {**fixture("anthropic_text.json"), "content": []}
    with FakeServer(FakeReply(empty)) as srv, pytest.raises(EmptyReply, match="empty reply") as err:
        await model(srv).complete(ChatRequest(({"role": "user", "content": "x"},)))
    u = empty["usage"]  # kept on the error, so that the call is still billed
    assert err.value.response.usage.prompt_tokens >= u["input_tokens"] > 0


async def test_500_exhausts_retries(sleeps: Sleeps) -> None:
    with (
        FakeServer(default=FakeReply({"error": {"message": "down"}}, status=503)) as srv,
        pytest.raises(UpstreamError, match="HTTP 503"),
    ):
        await model(srv, sleeps, max_retries=1).complete(
            ChatRequest(({"role": "user", "content": "x"},))
        )
    assert len(srv.received) == 2


def _stream_events(*, stop: bool = True) -> list[tuple[str, dict[str, object]]]:
    """Anthropic's stream of a text block then a tool_use block (input in two deltas)."""
    msg = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
           "content": [], "stop_reason": None, "stop_sequence": None,
           "usage": {"input_tokens": 2000, "output_tokens": 1}}
    out: list[tuple[str, dict[str, object]]] = [
        ("message_start", {"type": "message_start", "message": msg}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("ping", {"type": "ping"}),
        *[("content_block_delta", {"type": "content_block_delta", "index": 0,
                                   "delta": {"type": "text_delta", "text": t}})
          for t in ("Let me ", "check.")],
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {
            "type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}}),
        *[("content_block_delta", {"type": "content_block_delta", "index": 1,
                                   "delta": {"type": "input_json_delta", "partial_json": j}})
          for j in ('{"city": "Li', 'sbon"}')],
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use",
                                                              "stop_sequence": None},
                           "usage": {"output_tokens": 100}}),
    ]
    return out + ([("message_stop", {"type": "message_stop"})] if stop else [])


async def test_stream_passes_text_and_tool_input_deltas_on() -> None:
    from copage.llm.model_types import stream

    req = ChatRequest(({"role": "user", "content": "weather?"},))
    with FakeServer(FakeReply(sse=list(_stream_events()))) as srv:
        events = [e async for e in stream(model(srv), req)]
    assert srv.received[0]["stream"] is True
    assert [e.text for e in events if e.kind == "text"] == ["Let me ", "check."]
    deltas = [e.tool_call for e in events if e.kind == "tool_call"]
    assert [(d.index, d.id, d.name, d.arguments) for d in deltas if d is not None] == [
        (0, "toolu_1", "get_weather", ""), (0, None, None, '{"city": "Li'),
        (0, None, None, 'sbon"}')]
    done = events[-1].response
    assert events[-1].kind == "done" and done is not None
    assert done.text == "Let me check." and done.finish_reason == "tool_calls"
    assert done.tool_calls == (ToolCall("toolu_1", "get_weather", '{"city": "Lisbon"}'),)
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (2000, 100)


async def test_stream_cut_short_or_failing_is_an_error() -> None:
    from copage.llm.model_types import stream

    req = ChatRequest(({"role": "user", "content": "weather?"},))
    with FakeServer(FakeReply(sse=list(_stream_events(stop=False)))) as srv, \
            pytest.raises(BadResponse, match="without message_stop"):
        [e async for e in stream(model(srv), req)]
    failing = [*_stream_events()[:4], ("error", {"type": "error", "error": {
        "type": "overloaded_error", "message": "Overloaded"}})]
    with FakeServer(FakeReply(sse=failing)) as srv, \
            pytest.raises(UpstreamError, match="stream failed: Overloaded"):
        [e async for e in stream(model(srv), req)]
