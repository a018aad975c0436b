"""One contract every model client passes, against the shipped loopback fake server.

Clients: the OpenAI SDK adapter, the Anthropic SDK adapter, the plain-HTTP client
(:mod:`copage.llm.http_model`) and the Responses API client, and every wrapper of a
model (cache, meter, concurrency bound, the text tool protocol) around the HTTP
client; :func:`test_every_chat_model_class_is_in_the_contract` keeps that list whole.
Each is driven over real HTTP by :class:`copage.llm.fake_server.FakeServer`
speaking its wire format:
errors (4xx, 5xx, a malformed 200), retries (429 / 5xx, then success; a 4xx is
not retried), tool calls, and streaming (text deltas, tool-call deltas).

What a client legitimately does not support is said in its :class:`Client` row
(``native_stream=False``: a client without native streaming goes through the
one-chunk fallback), and the streaming tests check that fallback instead of
skipping. Every network client streams natively today; the text tool protocol
does not (its calls are read from the whole reply).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import pkgutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from copage.llm import (
    AuthError,
    BadResponse,
    ChatModel,
    ChatRequest,
    EmptyReply,
    RateLimited,
    RequestRejected,
    UpstreamError,
    get_model,
    stream,
)
from copage.llm.bounded import BoundedModel
from copage.llm.fake_server import FakeReply, FakeServer, Reply, completion_body, stream_events
from copage.llm.http_model import HttpChatModel
from copage.llm.meter import MeteredModel, UsageMeter
from copage.llm.response_cache import CachedModel, ResponseCache
from copage.llm.responses_model import ResponsesModel
from copage.llm.textmodel import TextProtocolModel
from copage.llm.transport import transport_for

from .conftest import RECALL_TOOL, SECRET, Sleeps

USER = ({"role": "user", "content": "Where should I eat?"},)
TEXT = "Try Som Tam House on 5th."
PIECES = ["Try ", "Som Tam ", "House on 5th."]
CALL_ID, ARGS = "call_1_0", {"page": "p3"}


# --- wire formats ---------------------------------------------------------------------


def _chat_text() -> Any:
    return completion_body({"model": "fake"}, Reply(text=TEXT), 1)


def _chat_tool() -> Any:
    return completion_body({"model": "fake"}, Reply(tool_calls=[("recall", ARGS)]), 1)


def _chat_error(status: int, message: str) -> Any:
    return {"error": {"message": message, "type": "fake"}}


def _chat_sse(text: bool) -> list[Any]:
    body = {"model": "fake", "stream_options": {"include_usage": True}}
    reply = Reply(text=TEXT, pieces=PIECES) if text else Reply(tool_calls=[("recall", ARGS)])
    return [*stream_events(body, reply, 1), "[DONE]"]


def _anthropic(content: list[dict[str, Any]], stop: str) -> Any:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
            "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5}}


def _anthropic_sse(text: bool) -> list[Any]:
    """Anthropic's named stream events: one text block, or one tool_use block."""
    start = {**_anthropic([], "end_turn"), "stop_reason": None}
    if text:
        block: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in PIECES]
        stop = "end_turn"
    else:
        block = {"type": "tool_use", "id": CALL_ID, "name": "recall", "input": {}}
        whole = json.dumps(ARGS)
        deltas = [{"type": "input_json_delta", "partial_json": j}
                  for j in (whole[:5], whole[5:])]
        stop = "tool_use"
    return [("message_start", {"type": "message_start", "message": start}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": block}),
            *[("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d})
              for d in deltas],
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 5}}),
            ("message_stop", {"type": "message_stop"})]


def _anthropic_error(status: int, message: str) -> Any:
    kind = {400: "invalid_request_error", 401: "authentication_error",
            429: "rate_limit_error"}.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


def _response(output: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 0, "status": "completed",
            "model": "fake", "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}


_MESSAGE = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": TEXT, "annotations": []}]}
_CALL = {"type": "function_call", "id": "fc_1", "call_id": CALL_ID, "name": "recall",
         "arguments": json.dumps(ARGS), "status": "completed"}


def _responses_sse(text: bool) -> list[Any]:
    if text:
        events: list[Any] = [
            {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
             "content_index": 0, "delta": p, "logprobs": []} for p in PIECES]
        final = _response([_MESSAGE])
    else:
        added = {**_CALL, "arguments": "", "status": "in_progress"}
        whole = json.dumps(ARGS)
        events = [{"type": "response.output_item.added", "output_index": 0, "item": added}]
        events += [{"type": "response.function_call_arguments.delta", "item_id": "fc_1",
                    "output_index": 0, "delta": part} for part in (whole[:5], whole[5:])]
        final = _response([_CALL])
    events.append({"type": "response.completed", "response": final})
    return [{**e, "sequence_number": i} for i, e in enumerate(events)]


# --- the clients ----------------------------------------------------------------------


@dataclass(frozen=True)
class Client:
    """One model client and the wire format its fake server speaks."""

    name: str
    make: Callable[[FakeServer, Sleeps, int], ChatModel]  # server, fake sleep, retries
    text: Callable[[], Any]
    tool: Callable[[], Any]
    malformed: Any  # a 200 whose body is not a usable reply
    error: Callable[[int, str], Any]
    path: str
    sse: Callable[[bool], list[Any]] | None  # text (True) or tool-call (False) events
    native_stream: bool = True
    call_id: str | None = CALL_ID  # None: the client makes its own ids (text protocol)


def _openai(srv: FakeServer, sleeps: Sleeps, retries: int) -> ChatModel:
    return get_model(f"openai:gpt-4o-mini@{srv.url}", api_key=SECRET, sleep=sleeps,
                     max_retries=retries)


def _http(srv: FakeServer, sleeps: Sleeps, retries: int) -> ChatModel:
    t = transport_for(srv.url, 10.0)
    m = HttpChatModel("gpt-4o-mini", base_url=srv.url, transport=lambda: t,
                      api_key=SECRET, retries=retries)
    m.retry = dataclasses.replace(m.retry, sleep=sleeps)
    return m


def _anthropic_model(srv: FakeServer, sleeps: Sleeps, retries: int) -> ChatModel:
    return get_model(f"anthropic:claude-haiku-4-5@{srv.root}", api_key=SECRET, sleep=sleeps,
                     max_retries=retries)


def _responses(srv: FakeServer, sleeps: Sleeps, retries: int) -> ChatModel:
    return ResponsesModel("gpt-4o-mini", base_url=srv.url, api_key=SECRET,
                          sleep=sleeps, max_retries=retries)


def _cached(srv: FakeServer, sleeps: Sleeps, retries: int) -> ChatModel:
    cache = ResponseCache(Path(tempfile.mkdtemp(prefix="copage-contract-")) / "cache.db")
    return CachedModel(_http(srv, sleeps, retries), cache)


def _text_tool() -> Any:
    """A text-only model's recall call, written as the text protocol asks."""
    return completion_body({"model": "fake"}, Reply(text=f"RECALL {ARGS['page']}"), 1)


_CHAT_MALFORMED = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                   "choices": []}
#: A wrapper around the HTTP client speaks its wire format (Chat Completions).
_WRAPPED = {"text": _chat_text, "tool": _chat_tool, "malformed": _CHAT_MALFORMED,
            "error": _chat_error, "path": "/v1/chat/completions", "sse": _chat_sse}

CLIENTS = [
    Client("openai-sdk", _openai, _chat_text, _chat_tool,
           {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []},
           _chat_error, "/v1/chat/completions", _chat_sse),
    Client("http", _http, _chat_text, _chat_tool,
           {"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []},
           _chat_error, "/v1/chat/completions", _chat_sse),
    Client("anthropic-sdk", _anthropic_model,
           lambda: _anthropic([{"type": "text", "text": TEXT}], "end_turn"),
           lambda: _anthropic([{"type": "tool_use", "id": CALL_ID, "name": "recall",
                                "input": ARGS}], "tool_use"),
           _anthropic([], "end_turn"), _anthropic_error, "/v1/messages", _anthropic_sse),
    Client("responses", _responses, lambda: _response([_MESSAGE]), lambda: _response([_CALL]),
           {"id": "resp_1", "object": "response", "status": "completed", "model": "m"},
           _chat_error, "/v1/responses", _responses_sse),
    Client("cached", _cached, **_WRAPPED),
    Client("metered", lambda srv, sleeps, retries: MeteredModel(
        _http(srv, sleeps, retries), UsageMeter()), **_WRAPPED),
    Client("bounded", lambda srv, sleeps, retries: BoundedModel(
        _http(srv, sleeps, retries), 1), **_WRAPPED),
    Client("text-protocol", lambda srv, sleeps, retries: TextProtocolModel(
        _http(srv, sleeps, retries)), **{**_WRAPPED, "tool": _text_tool, "sse": None},
        native_stream=False, call_id=None),
]


@pytest.fixture(params=CLIENTS, ids=lambda c: c.name)
def client(request: pytest.FixtureRequest) -> Client:
    c: Client = request.param
    return c


def _err(c: Client, status: int, message: str = "nope", **headers: str) -> FakeReply:
    return FakeReply(c.error(status, message), status=status, headers=headers)


# --- the contract ---------------------------------------------------------------------


async def test_text_reply(client: Client, sleeps: Sleeps) -> None:
    with FakeServer(FakeReply(client.text())) as srv:
        resp = await client.make(srv, sleeps, 0).complete(ChatRequest(USER, max_tokens=50))
    assert resp.text == TEXT and resp.tool_calls == () and resp.finish_reason == "stop"
    assert resp.usage.prompt_tokens == 10 and resp.usage.completion_tokens == 5
    assert srv.paths == [client.path]


async def test_tool_call_reply(client: Client, sleeps: Sleeps) -> None:
    with FakeServer(FakeReply(client.tool())) as srv:
        resp = await client.make(srv, sleeps, 0).complete(
            ChatRequest(USER, tools=(RECALL_TOOL,), tool_choice="auto"))
    assert resp.finish_reason == "tool_calls" and len(resp.tool_calls) == 1
    call = resp.tool_calls[0]
    assert (call.name, json.loads(call.arguments)) == ("recall", ARGS) and call.id
    assert client.call_id in (None, call.id)
    sent = json.dumps(srv.received[0]).lower()
    assert "recall" in sent  # the tool was offered (natively, or in the text protocol)


@pytest.mark.parametrize(("status", "error"), [
    (400, RequestRejected), (401, AuthError), (404, RequestRejected), (500, UpstreamError),
    (503, UpstreamError), (429, RateLimited)])
async def test_error_status_maps(client: Client, sleeps: Sleeps, status: int,
                                 error: type[Exception]) -> None:
    with FakeServer(default=_err(client, status, "no thanks")) as srv, pytest.raises(error) as e:
        await client.make(srv, sleeps, 0).complete(ChatRequest(USER))
    assert len(srv.received) == 1  # no retries were allowed
    assert SECRET not in str(e.value)


async def test_malformed_200_is_bad_response(client: Client, sleeps: Sleeps) -> None:
    with FakeServer(FakeReply(client.malformed)) as srv, pytest.raises(BadResponse):
        await client.make(srv, sleeps, 0).complete(ChatRequest(USER))
    assert len(srv.received) == 1


def _empty(c: Client) -> Any:
    """A 200 reply with no text and no tool call, in ``c``'s wire format (usage 10 in)."""
    if c.path == "/v1/messages":
        return _anthropic([], "end_turn")
    if c.path == "/v1/responses":
        return _response([])
    return completion_body({"model": "fake"}, Reply(text=""), 1)


async def test_empty_reply_keeps_its_usage(client: Client, sleeps: Sleeps) -> None:
    """An empty reply is an ``EmptyReply`` (the chat loop asks again) that carries the
    reply's usage: the provider billed the call, so whoever counts calls bills it too."""
    with FakeServer(FakeReply(_empty(client))) as srv:
        model = client.make(srv, sleeps, 0)
        with pytest.raises(EmptyReply) as err:
            await model.complete(ChatRequest(USER))
    assert err.value.response is not None and err.value.response.usage.prompt_tokens == 10
    if isinstance(model, MeteredModel):
        assert model.meter.totals().prompt_tokens == 10 and model.meter.calls == 1


@pytest.mark.parametrize("status", [429, 500, 503])
async def test_retryable_then_success(client: Client, sleeps: Sleeps, status: int) -> None:
    with FakeServer(_err(client, status, "busy"), FakeReply(client.text())) as srv:
        resp = await client.make(srv, sleeps, 2).complete(ChatRequest(USER))
    assert resp.text == TEXT and len(srv.received) == 2 and len(sleeps.delays) == 1


async def test_retry_after_is_honoured(client: Client, sleeps: Sleeps) -> None:
    with FakeServer(_err(client, 429, "slow down", **{"retry-after": "3"}),
                    FakeReply(client.text())) as srv:
        resp = await client.make(srv, sleeps, 2).complete(ChatRequest(USER))
    assert resp.text == TEXT and len(srv.received) == 2 and sleeps.delays == [3.0]


async def test_retries_run_out(client: Client, sleeps: Sleeps) -> None:
    with FakeServer(default=_err(client, 503, "down")) as srv, pytest.raises(UpstreamError):
        await client.make(srv, sleeps, 2).complete(ChatRequest(USER))
    assert len(srv.received) == 3 and len(sleeps.delays) == 2


async def test_4xx_is_not_retried(client: Client, sleeps: Sleeps) -> None:
    with FakeServer(default=_err(client, 400, "bad")) as srv, pytest.raises(RequestRejected):
        await client.make(srv, sleeps, 2).complete(ChatRequest(USER))
    assert len(srv.received) == 1 and sleeps.delays == []


async def test_stream_text_deltas(client: Client, sleeps: Sleeps) -> None:
    reply = FakeReply(sse=client.sse(True)) if client.sse else FakeReply(client.text())
    with FakeServer(reply) as srv:
        events = [e async for e in stream(client.make(srv, sleeps, 0), ChatRequest(USER))]
    texts = [e.text for e in events if e.kind == "text"]
    assert "".join(texts) == TEXT
    final = events[-1].response
    assert events[-1].kind == "done" and final is not None and final.text == TEXT
    body = srv.received[0]
    if client.native_stream:
        assert texts == PIECES and body.get("stream") is True
    else:  # not supported: one chunk from a whole (non-streamed) reply
        assert texts == [TEXT] and "stream" not in body


async def test_stream_tool_call_deltas(client: Client, sleeps: Sleeps) -> None:
    reply = FakeReply(sse=client.sse(False)) if client.sse else FakeReply(client.tool())
    with FakeServer(reply) as srv:
        events = [e async for e in stream(client.make(srv, sleeps, 0),
                                          ChatRequest(USER, tools=(RECALL_TOOL,)))]
    deltas = [e.tool_call for e in events if e.kind == "tool_call" and e.tool_call]
    final = events[-1].response
    assert events[-1].kind == "done" and final is not None
    assert final.finish_reason == "tool_calls" and len(final.tool_calls) == 1
    assert json.loads(final.tool_calls[0].arguments) == ARGS
    assert client.call_id in (None, final.tool_calls[0].id)
    if client.native_stream:
        assert len(deltas) >= 2 and {d.index for d in deltas} == {0}
        assert json.loads("".join(d.arguments or "" for d in deltas)) == ARGS
        assert deltas[0].id == CALL_ID and deltas[0].name == "recall"
    else:  # not supported: the whole call arrives with the fallback's done event
        assert "stream" not in srv.received[0]


async def test_stream_error_before_first_event(client: Client, sleeps: Sleeps) -> None:
    with FakeServer(_err(client, 503, "down"), FakeReply(sse=client.sse(True)) if client.sse
                    else FakeReply(client.text())) as srv:
        events = [e async for e in stream(client.make(srv, sleeps, 1), ChatRequest(USER))]
    assert events[-1].response is not None and events[-1].response.text == TEXT
    assert len(srv.received) == 2  # a failure before any event is retried


@pytest.mark.parametrize("content_type", ["application/json", "text/html"])
async def test_non_json_200_is_bad_response(client: Client, sleeps: Sleeps,
                                            content_type: str) -> None:
    reply = FakeReply(raw=b"<html>gateway says hi</html>", content_type=content_type)
    with FakeServer(reply) as srv, pytest.raises(BadResponse):
        await client.make(srv, sleeps, 2).complete(ChatRequest(USER))
    assert len(srv.received) == 1  # a malformed reply is not retried


def test_every_client_that_streams_natively_says_so() -> None:
    """What ``capabilities`` tells callers (``recall_mode="auto"``) matches the contract."""
    from copage.llm.capabilities import STREAM, supports

    for c in CLIENTS:
        with FakeServer() as srv:
            model = c.make(srv, Sleeps(), 0)
        assert supports(model, STREAM) == c.native_stream, c.name


def test_every_chat_model_class_is_in_the_contract() -> None:
    """Every class of ``copage.llm`` that answers requests (``complete``) is a row above,
    or is named here with the reason it is not: a new client or wrapper joins the suite."""
    import copage.llm as llm_pkg
    from copage.llm.scripted import ScriptedModel

    not_clients = {ScriptedModel: "a test double: no wire format, its script is its contract"}
    with FakeServer() as srv:
        covered = {type(c.make(srv, Sleeps(), 0)) for c in CLIENTS}
    found = set()
    for info in pkgutil.iter_modules(llm_pkg.__path__):
        module = importlib.import_module(f"copage.llm.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (cls.__module__ == module.__name__ and not cls.__name__.startswith("_")
                    and callable(getattr(cls, "complete", None))
                    and not getattr(cls, "_is_protocol", False)):
                found.add(cls)
    assert found - covered - set(not_clients) == set()
    assert {HttpChatModel, TextProtocolModel, CachedModel} <= found  # the walk sees them


def test_responses_upstream_gets_the_reasoning_effort() -> None:
    """A Chat Completions ``reasoning_effort`` goes to a Responses upstream as
    ``reasoning: {"effort": ...}`` (it was dropped)."""
    from copage.llm.model_types import ChatRequest

    model = ResponsesModel("o4-mini", base_url="http://127.0.0.1:9/v1", api_key=SECRET)
    body = model.body(ChatRequest(messages=USER, extra={"reasoning_effort": "high"}))
    assert body["reasoning"] == {"effort": "high"}
    assert "reasoning" not in model.body(ChatRequest(messages=USER))
