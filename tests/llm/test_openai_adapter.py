"""The OpenAI adapter driven through the real SDK against a local fake server."""

from __future__ import annotations

import logging

import pytest

from copage.core.types import ToolCall
from copage.llm import (
    AuthError,
    BadResponse,
    ChatRequest,
    EmptyReply,
    ModelTimeout,
    RateLimited,
    UpstreamError,
    get_model,
    stream,
)
from copage.llm.chat_messages import assistant_message, tool_message
from copage.llm.fake_server import FakeReply, FakeServer

from .conftest import RECALL_TOOL, SECRET, Sleeps, fixture

USER = ({"role": "user", "content": "Where should I eat?"},)


def model(server: FakeServer, sleeps: Sleeps | None = None, **kw: object):  # type: ignore[no-untyped-def]
    return get_model(f"openai:gpt-4o-mini@{server.url}", api_key=SECRET, sleep=sleeps, **kw)


async def test_plain_reply_and_cost() -> None:
    with FakeServer(FakeReply(fixture("openai_chat_text.json"))) as srv:
        resp = await model(srv).complete(ChatRequest(USER, temperature=0.0, max_tokens=50))
    assert resp.text.startswith("Try Som Tam House")
    assert resp.finish_reason == "stop" and resp.tool_calls == ()
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens) == (1200, 300)
    assert resp.cost_usd == pytest.approx((1200 * 0.15 + 300 * 0.60) / 1e6)
    got = srv.requests[0]
    assert got.path == "/v1/chat/completions"
    assert got.headers["authorization"] == f"Bearer {SECRET}"
    assert got.body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Where should I eat?"}],
        "temperature": 0.0,
        "max_tokens": 50,
    }


async def test_tool_calls_and_history_shapes() -> None:
    history = (
        *USER,
        assistant_message("", [ToolCall("call_1", "recall", '{"page": "p2"}')]),
        tool_message("call_1", "page p2 text"),
    )
    req = ChatRequest(history, tools=(RECALL_TOOL,), tool_choice="auto")
    with FakeServer(FakeReply(fixture("openai_chat_tool_calls.json"))) as srv:
        resp = await model(srv).complete(req)
    assert [c.arguments for c in resp.tool_calls] == ['{"page": "p3"}', '{"page": "p7"}']
    assert resp.tool_calls[0] == ToolCall("call_Wd3kQ1", "recall", '{"page": "p3"}')
    assert resp.text == "" and resp.finish_reason == "tool_calls"
    body = srv.received[0]
    assert body["tools"] == [RECALL_TOOL] and body["tool_choice"] == "auto"
    # custom base_url => local-server shape: "" rather than null content
    assert body["messages"][1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "recall", "arguments": '{"page": "p2"}'},
            }
        ],
    }
    assert body["messages"][2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "page p2 text",
    }


async def test_null_content_when_asked() -> None:
    history = (
        *USER,
        assistant_message("", [ToolCall("c", "recall", "{}")]),
        tool_message("c", "x"),
    )
    with FakeServer(FakeReply(fixture("openai_chat_text.json"))) as srv:
        await model(srv, null_content=True).complete(ChatRequest(history))
    assert srv.received[0]["messages"][1]["content"] is None


async def test_logprobs() -> None:
    with FakeServer(FakeReply(fixture("openai_chat_logprobs.json"))) as srv:
        resp = await model(srv).complete(ChatRequest(USER, logprobs=True))
    assert resp.logprobs == [-0.0012, -0.25, -1.5, -0.01]
    assert srv.received[0]["logprobs"] is True


async def test_500_then_success_is_retried(sleeps: Sleeps) -> None:
    err = FakeReply({"error": {"message": "boom"}}, status=500)
    with FakeServer(err, err, FakeReply(fixture("openai_chat_text.json"))) as srv:
        resp = await model(srv, sleeps, base_delay=1.0).complete(ChatRequest(USER))
    assert resp.text and len(srv.received) == 3
    assert len(sleeps.delays) == 2
    assert 0 <= sleeps.delays[0] <= 1.0 and 0 <= sleeps.delays[1] <= 2.0


async def test_429_retry_after_is_honoured(sleeps: Sleeps) -> None:
    limited = FakeReply(
        {"error": {"message": "slow down"}}, status=429, headers={"retry-after": "7"}
    )
    with FakeServer(limited, FakeReply(fixture("openai_chat_text.json"))) as srv:
        await model(srv, sleeps).complete(ChatRequest(USER))
    assert sleeps.delays == [7.0] and len(srv.received) == 2


async def test_retries_run_out(sleeps: Sleeps) -> None:
    limited = FakeReply({"error": {"message": "slow down"}}, status=429)
    with FakeServer(default=limited) as srv, pytest.raises(RateLimited, match="openai: HTTP 429"):
        await model(srv, sleeps, max_retries=2).complete(ChatRequest(USER))
    assert len(srv.received) == 3


async def test_401_is_auth_error_not_retried_and_key_is_hidden(
    sleeps: Sleeps, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    bad = FakeReply({"error": {"message": f"Incorrect API key provided: {SECRET}"}}, status=401)
    with FakeServer(bad) as srv:
        m = model(srv, sleeps)
        with pytest.raises(AuthError) as info:
            await m.complete(ChatRequest(USER))
    assert len(srv.received) == 1 and sleeps.delays == []
    msg = str(info.value)
    assert "openai: HTTP 401" in msg and SECRET not in msg and "***" in msg
    assert SECRET not in repr(m) and SECRET not in caplog.text
    assert info.value.__cause__ is None and info.value.__suppress_context__


async def test_timeout(sleeps: Sleeps) -> None:
    slow = FakeReply(fixture("openai_chat_text.json"), delay=1.0)
    with FakeServer(slow) as srv, pytest.raises(ModelTimeout, match="timed out"):
        await model(srv, sleeps, timeout=0.2, max_retries=0).complete(ChatRequest(USER))


async def test_connection_error_is_upstream(sleeps: Sleeps) -> None:
    m = get_model("openai:x@http://127.0.0.1:9/v1", sleep=sleeps, max_retries=1)
    with pytest.raises(UpstreamError, match="connection"):
        await m.complete(ChatRequest(USER))
    assert len(sleeps.delays) == 1


async def test_empty_reply_is_bad_response() -> None:
    empty = fixture("openai_chat_text.json")
    empty["choices"][0]["message"]["content"] = ""
    with FakeServer(FakeReply(empty), FakeReply({**empty, "choices": []})) as srv:
        m = model(srv)
        with pytest.raises(EmptyReply, match="empty reply") as err:
            await m.complete(ChatRequest(USER))
        # the empty reply keeps its usage: whoever counts calls still bills it
        assert err.value.response.usage.prompt_tokens == empty["usage"]["prompt_tokens"] > 0
        with pytest.raises(BadResponse, match="no choices"):
            await m.complete(ChatRequest(USER))


async def test_streaming_text_and_tool_call_deltas() -> None:
    chunks = fixture("openai_stream_tool_call.json")
    with FakeServer(FakeReply(sse=[*chunks, "[DONE]"])) as srv:
        events = [e async for e in stream(model(srv), ChatRequest(USER, tools=(RECALL_TOOL,)))]
    assert "".join(e.text for e in events if e.kind == "text") == "Let me check."
    deltas = [e.tool_call for e in events if e.kind == "tool_call"]
    assert "".join(d.arguments for d in deltas if d) == '{"page": "p3"}'
    final = events[-1].response
    assert events[-1].kind == "done" and final is not None
    assert final.text == "Let me check." and final.finish_reason == "tool_calls"
    assert final.tool_calls == (ToolCall("call_Str1", "recall", '{"page": "p3"}'),)
    assert final.usage.prompt_tokens == 500
    body = srv.received[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


async def test_stream_and_complete_agree() -> None:
    """Both paths share the accumulator: the same content gives the same response."""
    whole = fixture("openai_chat_text.json")
    text = whole["choices"][0]["message"]["content"]
    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": whole["model"]}
    sse = [
        {
            **chunk,
            "choices": [{"index": 0, "delta": {"content": text[:10]}, "finish_reason": None}],
        },
        {
            **chunk,
            "choices": [{"index": 0, "delta": {"content": text[10:]}, "finish_reason": "stop"}],
        },
        {**chunk, "choices": [], "usage": whole["usage"]},
        "[DONE]",
    ]
    with FakeServer(FakeReply(whole), FakeReply(sse=sse)) as srv:
        m = model(srv)
        a = await m.complete(ChatRequest(USER))
        b = [e async for e in stream(m, ChatRequest(USER))][-1].response
    assert a == b
