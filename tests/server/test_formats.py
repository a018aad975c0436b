"""The same proxy behaviour through every client format (Chat Completions, the Responses
API resending its input or continuing ``previous_response_id``, Anthropic Messages),
each driven by its official SDK against a real HTTP server of the proxy."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import openai
import pytest
from formats import FORMATS, Client
from proxy_helpers import KEY_A, KEY_B, Proxy

from copage.llm.fake_server import Reply
from copage.memory import PagedMemory

FACTS = ["My sister Marta lives in Lisbon.", "I am allergic to peanuts.",
         "My budget is 450 dollars.", "The meeting moved to Thursday."]


def _conversations(proxy: Proxy, tenant: str = "alice") -> list[str]:
    return [c.id for c in proxy.state.store.list_conversations(tenant=tenant)]


def _turns(proxy: Proxy, cid: str, tenant: str = "alice") -> list[tuple[str, str]]:
    mem = PagedMemory(store=proxy.state.store, conversation_id=cid, tenant=tenant,
                      create=False)
    return [(t.role, t.text) for t in mem.turns]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_pages_and_recall_in_one_conversation(proxy: Proxy, fmt: str, stream: bool) -> None:
    c = Client(proxy, fmt, stream=stream)
    for fact in FACTS:
        assert c.say(fact).text == f"echo: {fact}"
    assert len(_conversations(proxy)) == 1, "the client's turns continue one conversation"
    sent = proxy.upstream.received[-1]
    system = sent["messages"][0]["content"]
    assert sent["messages"][0]["role"] == "system" and system.startswith("Be brief.")
    assert "[p1:" in system and "[p2:" in system, "the upstream sees the bookmarks"
    wire = json.dumps(sent["messages"])
    assert FACTS[0] not in wire and FACTS[3] in wire
    n = len(proxy.upstream.received)
    seen = c.say("Where does my sister live? RECALL p1")
    assert len(proxy.upstream.received) == n + 2, "one recall round trip"
    assert seen.text.startswith('tool said: <page id="p1">') and "Marta" in seen.text
    assert seen.calls == [], "the client never sees the recall tool"
    cid = _conversations(proxy)[0]
    assert _conversations(proxy) == [cid]
    turns = _turns(proxy, cid)
    assert [r for r, _ in turns] == ["user", "assistant"] * 5, "nothing stored twice"
    if not stream:
        assert seen.conversation_id == cid and seen.stats["recalled"] == ["p1"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_client_tool_round_trip(proxy: Proxy, fmt: str, stream: bool) -> None:
    c = Client(proxy, fmt, stream=stream, tools=True)
    c.say("Hello there.")
    seen = c.say("What is the WEATHER in Paris?")
    assert [(name, args) for _, name, args in seen.calls] == [("get_weather",
                                                               {"city": "Paris"})]
    call_id = seen.calls[0][0]
    up = proxy.upstream.received[-1]
    assert [t["function"]["name"] for t in up["tools"]] == ["get_weather"]
    after = c.tool_result(call_id, "18C and sunny")
    assert after.text == "tool said: 18C and sunny" and after.calls == []
    last = proxy.upstream.received[-1]["messages"]
    assert last[-1] == {"role": "tool", "tool_call_id": call_id, "content": "18C and sunny"}
    assert last[-2]["tool_calls"][0]["id"] == call_id
    (cid,) = _conversations(proxy)
    roles = [r for r, _ in _turns(proxy, cid)]
    assert roles == ["user", "assistant", "user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_sdk_retry_is_answered_from_the_store(make_proxy: Callable[..., Proxy],
                                              fmt: str) -> None:
    proxy = make_proxy()
    calls = {"n": 0}

    def respond(body: dict[str, Any]) -> Reply:
        calls["n"] += 1
        slow = body["messages"][-1].get("content") == "slow question"
        return Reply(text=f"answer {calls['n']}", delay=2.0 if slow else 0.0)

    proxy.upstream.responder = respond
    c = Client(proxy, fmt)
    first = c.say("u1")
    # the SDK times out after 1 s and retries (X-Stainless-Retry-Count: 1) while the
    # proxy still waits for the upstream: the retry gets the turn's stored answer
    retrying = Client(proxy, fmt, max_retries=4, timeout=1.0)
    retrying.history, retrying.previous = c.history, c.previous
    again = retrying.say("slow question")
    assert again.stats.get("replayed") is True
    asked = [b for b in proxy.upstream.received if b["messages"][-1].get("content")
             == "slow question"]
    assert len(asked) == 1, "one upstream call for the question"
    (cid,) = _conversations(proxy)
    assert _turns(proxy, cid) == [("user", "u1"), ("assistant", first.text),
                                  ("user", "slow question"), ("assistant", again.text)]


def test_previous_response_id_from_an_older_response_forks(proxy: Proxy) -> None:
    c = Client(proxy, "responses-prev")
    c.say("u1")
    r1 = c.previous
    c.say("u2")
    (cid,) = _conversations(proxy)
    fork = Client(proxy, "responses-prev")
    fork.previous = r1
    seen = fork.say("another u2")
    assert seen.conversation_id != cid, "continuing an older response is a new branch"
    assert _turns(proxy, cid) == [("user", "u1"), ("assistant", "echo: u1"),
                                  ("user", "u2"), ("assistant", "echo: u2")]
    assert _turns(proxy, seen.conversation_id or "") == [
        ("user", "u1"), ("assistant", "echo: u1"), ("user", "another u2"),
        ("assistant", "echo: another u2")]
    # the branch continues from its own response id; the original from its own
    fork.say("u3 on the branch")
    c.say("u3 on the original")
    assert len(_conversations(proxy)) == 2
    assert _turns(proxy, cid)[-2] == ("user", "u3 on the original")


def test_previous_response_id_of_another_tenant_is_not_found(proxy: Proxy) -> None:
    import openai

    c = Client(proxy, "responses-prev")
    c.say("alice's secret 7319")
    bob = proxy.client(KEY_B)
    n = len(proxy.upstream.received)
    with pytest.raises(openai.BadRequestError) as err:
        bob.responses.create(model="m", input="what was it?", previous_response_id=c.previous)
    assert err.value.code == "previous_response_not_found"
    with pytest.raises(openai.BadRequestError) as err:
        bob.responses.create(model="m", input="x", previous_response_id="resp_garbage")
    assert err.value.code == "previous_response_not_found"
    assert len(proxy.upstream.received) == n, "refused before any upstream call"
    assert _conversations(proxy, "bob") == []


def test_responses_retrieve_returns_the_stored_response(proxy: Proxy) -> None:
    """``client.responses.retrieve(id)`` gets the stored answer an id names (an older one
    too), under the caller's tenant only; unknown, ``store: false`` and other tenants'
    ids are 404s in OpenAI's shape."""
    client = proxy.client()
    first = client.responses.create(model="fake-model", input="u1")
    second = client.responses.create(model="fake-model", input="u2",
                                     previous_response_id=first.id)
    got = client.responses.retrieve(first.id)
    assert got.id == first.id and got.status == "completed" and got.output_text == "echo: u1"
    assert got.model == first.model and got.usage == first.usage
    assert got.created_at >= first.created_at - 1
    assert client.responses.retrieve(second.id).output_text == "echo: u2"
    # a client tool call comes back as its function_call item
    proxy.upstream.responder = lambda body: Reply(tool_calls=[("get_weather",
                                                               {"city": "Lisbon"})])
    tool = {"type": "function", "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
    called = client.responses.create(model="fake-model", input="weather?", tools=[tool],
                                     previous_response_id=second.id)
    (item,) = client.responses.retrieve(called.id).output
    (made,) = called.output
    assert item.type == made.type == "function_call"
    assert (item.call_id, item.name, json.loads(item.arguments)) == (
        made.call_id, made.name, {"city": "Lisbon"})
    n = len(proxy.upstream.received)
    unstored = client.responses.create(model="fake-model", input="u9", store=False)
    for rid, who in [(first.id, proxy.client(KEY_B)), (unstored.id, client),
                     ("resp_garbage", client), (first.id[:-2] + "zz", client)]:
        with pytest.raises(openai.NotFoundError) as err:
            who.responses.retrieve(rid)
        assert err.value.code == "response_not_found"
        assert err.value.body == {"message": f"Response with id '{rid}' not found.",
                                  "type": "invalid_request_error",
                                  "code": "response_not_found", "param": "response_id"}
    assert len(proxy.upstream.received) == n + 1, "only the store: false turn was asked"
    # a deleted conversation's responses are gone
    import httpx

    from copage.server.formats.responses import ResponseId

    cid = ResponseId.parse(first.id).conversation_id
    assert cid in _conversations(proxy)
    assert httpx.delete(f"{proxy.url}/v1/conversations/{cid}",
                        headers={"authorization": f"Bearer {KEY_A}"}).status_code == 200
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(first.id)


# ------------------------------------------------------------------ wire shapes
def _events(proxy: Proxy, path: str, body: dict[str, Any], **headers: str) -> list[str]:
    import httpx

    hdrs = {"authorization": f"Bearer {KEY_A}", **headers}
    with httpx.stream("POST", proxy.url + path, json=body, headers=hdrs, timeout=30) as r:
        assert r.status_code == 200, r.read()
        kinds = [line[7:] for line in r.iter_lines() if line.startswith("event: ")]
    return [k for k, _ in itertools.groupby(kinds)]  # runs of deltas as one


def test_responses_stream_event_sequence(proxy: Proxy) -> None:
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    kinds = _events(proxy, "/v1/responses", {"model": "m", "input": "hi there",
                                              "stream": True})
    assert kinds == ["response.created", "response.in_progress", "response.output_item.added",
                     "response.content_part.added", "response.output_text.delta",
                     "response.output_text.done", "response.content_part.done",
                     "response.output_item.done", "response.completed"]
    kinds = _events(proxy, "/v1/responses", {"model": "m", "input": "the WEATHER?",
                                              "tools": [tool], "stream": True})
    assert kinds[:3] == ["response.created", "response.in_progress",
                         "response.output_item.added"]
    assert kinds[3:] == ["response.function_call_arguments.delta",
                         "response.function_call_arguments.done",
                         "response.output_item.done", "response.completed"]


def test_messages_stream_event_sequence(proxy: Proxy) -> None:
    body = {"model": "m", "max_tokens": 64, "stream": True,
            "messages": [{"role": "user", "content": "hi there"}]}
    kinds = _events(proxy, "/v1/messages", body, **{"anthropic-version": "2023-06-01"})
    assert kinds == ["message_start", "ping", "content_block_start", "content_block_delta",
                     "content_block_stop",
                     "message_delta", "message_stop"]


def test_responses_usage_and_object(proxy: Proxy) -> None:
    resp = proxy.client().responses.create(model="m", input="hello", instructions="Be kind.")
    assert resp.object == "response" and resp.status == "completed"
    assert resp.output_text == "echo: hello" and resp.instructions == "Be kind."
    assert (resp.usage.input_tokens, resp.usage.output_tokens, resp.usage.total_tokens) == (
        10, 5, 15)
    assert proxy.upstream.received[-1]["messages"][0] == {"role": "system",
                                                          "content": "Be kind."}


def test_responses_errors_in_its_shape(proxy: Proxy) -> None:
    import openai

    c = proxy.client()
    with pytest.raises(openai.BadRequestError) as err:
        c.responses.create(model="m", input=[{"role": "user", "content": [
            {"type": "input_image", "image_url": "http://x/y.png"}]}])
    assert err.value.code == "unsupported_content" and "images" in err.value.message
    with pytest.raises(openai.BadRequestError) as err:
        c.responses.create(model="m", input="x", tools=[{"type": "web_search"}])
    assert err.value.code == "unsupported_tool"
    with pytest.raises(openai.AuthenticationError):
        proxy.client("sk-wrong-key-000000").responses.create(model="m", input="x")
    with pytest.raises(openai.BadRequestError):
        c.responses.create(model="m", input=[])
    # store=false: answered, but its id cannot be continued
    resp = c.responses.create(model="m", input="not kept", store=False)
    assert resp.store is False and resp.output_text == "echo: not kept"
    with pytest.raises(openai.BadRequestError) as err:
        c.responses.create(model="m", input="more", previous_response_id=resp.id)
    assert err.value.code == "previous_response_not_stored"


def test_responses_upstream_error_mid_stream(proxy: Proxy) -> None:
    proxy.upstream.responder = lambda body: Reply(text="one two three four", fail_after=2)
    with proxy.client().responses.stream(model="m", input="hi") as s:
        events = [e.type for e in s]
        with pytest.raises(RuntimeError, match="response.completed"):
            s.get_final_response()
    assert "response.output_text.delta" in events and events[-1] == "error"
    assert "response.completed" not in events
    assert _conversations(proxy) == [] or all(
        not _turns(proxy, cid) for cid in _conversations(proxy)), "nothing stored"


def test_messages_errors_in_anthropic_shape(proxy: Proxy) -> None:
    import anthropic

    c = anthropic.Anthropic(base_url=proxy.url, api_key=KEY_A,
                            max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as err:
        c.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "AAAA"}}]}])
    body = err.value.body
    assert isinstance(body, dict) and body["type"] == "error"
    assert body["error"]["type"] == "invalid_request_error"
    assert "image blocks are not supported" in body["error"]["message"]
    with pytest.raises(anthropic.AuthenticationError) as auth:
        anthropic.Anthropic(base_url=proxy.url, api_key="sk-wrong-key-000",
                            max_retries=0).messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}])
    assert auth.value.body["error"]["type"] == "authentication_error"  # type: ignore[index]
    # tool_choice maps onto the upstream's
    c.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}],
                      tools=[{"name": "get_weather", "input_schema": {"type": "object"}}],
                      tool_choice={"type": "tool", "name": "get_weather"})
    assert proxy.upstream.received[-1]["tool_choice"] == {
        "type": "function", "function": {"name": "get_weather"}}
    c.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "y"}],
                      tools=[{"name": "get_weather", "input_schema": {"type": "object"}}],
                      tool_choice={"type": "any"})
    assert proxy.upstream.received[-1]["tool_choice"] == "required"


# ------------------------------------------------------------------ Agents SDK
def test_messages_refusals_and_404s_in_anthropic_shape(proxy: Proxy) -> None:
    """Browser-guard refusals and unknown routes under /v1/messages reach the anthropic SDK
    as its own typed errors with Anthropic's body; Chat Completions keeps OpenAI's."""
    import anthropic

    n = len(proxy.upstream.received)
    evil = anthropic.Anthropic(base_url=proxy.url, api_key=KEY_A, max_retries=0,
                               default_headers={"Origin": "https://evil.example"})
    with pytest.raises(anthropic.PermissionDeniedError) as denied:
        evil.messages.create(model="m", max_tokens=16,
                             messages=[{"role": "user", "content": "hi"}])
    assert denied.value.body == {"type": "error", "error": {
        "type": "permission_error", "message": denied.value.body["error"]["message"]}}
    assert "cross-origin" in denied.value.body["error"]["message"]
    ok = anthropic.Anthropic(base_url=proxy.url, api_key=KEY_A, max_retries=0)
    with pytest.raises(anthropic.NotFoundError) as missing:  # POST /v1/messages/count_tokens
        ok.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hi"}])
    assert missing.value.body == {"type": "error", "error": {
        "type": "not_found_error", "message": "no route /v1/messages/count_tokens"}}
    assert len(proxy.upstream.received) == n, "nothing reached the upstream"
    chat = openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY_A, max_retries=0,
                         default_headers={"Origin": "https://evil.example"})
    with pytest.raises(openai.PermissionDeniedError) as refused:
        chat.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert refused.value.code == "cross_origin"


def test_agents_sdk_default_responses_model_through_the_proxy(proxy: Proxy) -> None:
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    asked: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The weather of a city."""
        asked.append(city)
        return f"18C in {city}"

    client = AsyncOpenAI(base_url=proxy.url + "/v1", api_key=KEY_A,
                         max_retries=0)
    agent = Agent(name="a", instructions="Be brief.", tools=[get_weather],
                  model=OpenAIResponsesModel(model="fake-model", openai_client=client))
    first = Runner.run_sync(agent, "Hello, I like Lisbon.")
    assert first.final_output == "echo: Hello, I like Lisbon."
    result = Runner.run_sync(agent, [*first.to_input_list(),
                                     {"role": "user", "content": "And the WEATHER?"}])
    assert asked == ["Paris"] and result.final_output == "tool said: 18C in Paris"
    (cid,) = _conversations(proxy)
    assert [r for r, _ in _turns(proxy, cid)] == [
        "user", "assistant", "user", "assistant", "tool", "assistant"]


# ------------------------------------------------------------------ 100 turns
@pytest.mark.parametrize("fmt", FORMATS)
def test_hundred_turns_at_default_paging(make_proxy: Callable[..., Proxy], fmt: str) -> None:
    """A 100-turn conversation paged by page count (4 resident: the default before paging
    by budget, which leaves these 3,000 tokens unpaged), through each client format:
    pages are evicted, the upstream sees bookmarks, a recall brings a page back."""
    from copage.core.config import PagerConfig

    proxy = make_proxy(paging=PagerConfig(resident_pages=4), store="sqlite")
    c = Client(proxy, fmt, stream=fmt == "responses-prev")
    for i in range(100):
        assert c.say(f"Note {i}: the code word of day {i} is w{i}x{i * 7}.").text.startswith(
            f"echo: Note {i}:")
    (cid,) = _conversations(proxy)
    mem = PagedMemory(store=proxy.state.store, conversation_id=cid, tenant="alice",
                      create=False)
    assert len(mem.turns) == 200 and mem.stats().evicted >= 10
    system = proxy.upstream.received[-1]["messages"][0]["content"]
    assert "[p1:" in system, "the upstream sees bookmarks"
    assert "code word of day 0 is" not in json.dumps(proxy.upstream.received[-1])
    seen = c.say("What was the code word of day 0? RECALL p1")
    assert "code word of day 0 is w0x0" in seen.text and seen.calls == []
    assert len(PagedMemory(store=proxy.state.store, conversation_id=cid, tenant="alice",
                           create=False).turns) == 202


def test_hundred_turns_at_the_default_paging_go_out_unchanged(
        make_proxy: Callable[..., Proxy]) -> None:
    """At the default paging (by budget) the same 100 turns, about 3,000 tokens, are never
    paged: the upstream receives the whole conversation, no bookmarks and no recall tool."""
    from copage.core.config import PagerConfig

    proxy = make_proxy(paging=PagerConfig(), store="sqlite")
    c = Client(proxy, "chat")
    for i in range(100):
        c.say(f"Note {i}: the code word of day {i} is w{i}x{i * 7}.")
    (cid,) = _conversations(proxy)
    mem = PagedMemory(store=proxy.state.store, conversation_id=cid, tenant="alice",
                      create=False)
    assert len(mem.turns) == 200 and mem.stats().evicted == 0
    sent = proxy.upstream.received[-1]
    assert not sent.get("tools") and "[p1:" not in json.dumps(sent)
    assert [m["content"] for m in sent["messages"] if m["role"] == "user"] == [
        f"Note {i}: the code word of day {i} is w{i}x{i * 7}." for i in range(100)]


# ------------------------------------------------------------------ upstream APIs
@pytest.mark.parametrize("api", ["responses", "messages"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_any_client_format_to_any_upstream_api(make_proxy: Callable[..., Proxy], fmt: str,
                                               api: str) -> None:
    """Proxy A speaks ``api`` to its upstream: a second proxy B (default paging, so it
    passes short requests through unpaged) that serves that API in front of the scripted
    Chat Completions upstream. A's paging, bookmarks and recall work end to end."""
    from copage.core.config import PagerConfig

    b = make_proxy(paging=PagerConfig())
    a = make_proxy(upstream=b.url + "/v1", upstream_api=api, upstream_key=KEY_A)
    c = Client(a, fmt)
    for fact in FACTS:
        assert c.say(fact).text == f"echo: {fact}"
    sent = b.upstream.received[-1]  # the scripted upstream: what B forwarded of A's request
    assert "[p1:" in sent["messages"][0]["content"] and FACTS[0] not in json.dumps(sent)
    seen = c.say("Where does my sister live? RECALL p1")
    assert seen.text.startswith('tool said: <page id="p1">') and "Marta" in seen.text
    assert seen.calls == []
    assert len(_conversations(a)) == 1
    (cid,) = _conversations(a)
    assert [r for r, _ in _turns(a, cid)] == ["user", "assistant"] * 5
    # B was reached through its `api` endpoint
    counts = b.state.metrics.render()
    assert f'endpoint="{api}"' in counts


def test_messages_upstream_is_streamed(make_proxy: Callable[..., Proxy]) -> None:
    """A streaming client of proxy A, whose upstream speaks Messages (proxy B in front of
    a slow scripted upstream), gets its first text delta before B's upstream has finished,
    and a client tool call's input as it comes, not the whole answer as one delta."""
    import time

    from copage.core.config import PagerConfig

    slow = "One two three four five six seven eight nine ten."
    b = make_proxy(paging=PagerConfig())
    b.upstream.responder = lambda body: Reply(text=slow, chunk_delay=0.15)
    a = make_proxy(upstream=b.url + "/v1", upstream_api="messages", upstream_key=KEY_A)
    first: float | None = None
    parts: list[str] = []
    for ch in a.client().chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "count"}], stream=True):
        if ch.choices and ch.choices[0].delta.content:
            first = first or time.monotonic()
            parts.append(ch.choices[0].delta.content)
    assert b.upstream.streamed, "A did not stream its Messages upstream (B's call was whole)"
    n = b.upstream.streamed[-1]
    assert first is not None and first < b.upstream.ended[n], "the first delta waited for the end"
    assert "".join(parts) == slow and len(parts) >= 5
    # a client tool call through the Messages upstream: its input streamed in pieces
    b.upstream.responder = lambda body: Reply(
        text="", tool_calls=[("get_weather", {"city": "Lisbon", "unit": "celsius"})],
        chunk_delay=0.05)
    c = Client(a, "messages", stream=True, tools=True)
    seen = c.say("weather?")
    assert [(name, args) for _, name, args in seen.calls] == [
        ("get_weather", {"city": "Lisbon", "unit": "celsius"})]
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}
    args: list[str] = []
    for ch in a.client().chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "weather?"}],
            tools=[tool], stream=True):
        for tc in (ch.choices[0].delta.tool_calls or []) if ch.choices else []:
            if tc.function and tc.function.arguments:
                args.append(tc.function.arguments)
    assert len(args) >= 2, "the tool input came as one delta"
    assert json.loads("".join(args)) == {"city": "Lisbon", "unit": "celsius"}


def test_upstream_api_is_checked() -> None:
    from copage.server.settings import ServeSettings, build_settings

    with pytest.raises(ValueError, match="--upstream-api must be one of chat, responses"):
        ServeSettings(upstream="http://127.0.0.1:1/v1", upstream_api="grpc", store="memory://")
    with pytest.raises(ValueError, match="needs --upstream URL"):
        ServeSettings(model="openai:gpt-4o-mini", upstream_api="messages", store="memory://")
    s = build_settings({"upstream": "http://127.0.0.1:1/v1"},
                       env={"COPAGE_UPSTREAM_API": "responses", "COPAGE_STORE": "memory://"})
    assert s.upstream_api == "responses"


def test_agents_sdk_hundred_turns_at_default_paging(make_proxy: Callable[..., Proxy]) -> None:
    """The Agents SDK's default model (Responses API, whole input resent each run) for 100
    turns paged by page count (4 resident, the default before paging by budget): one
    conversation, pages evicted, bookmarks sent, a recall served without the agent
    seeing it."""
    from agents import Agent, OpenAIResponsesModel, Runner, set_tracing_disabled
    from openai import AsyncOpenAI

    from copage.core.config import PagerConfig

    set_tracing_disabled(True)
    proxy = make_proxy(paging=PagerConfig(resident_pages=4), store="sqlite")
    client = AsyncOpenAI(base_url=proxy.url + "/v1", api_key=KEY_A, max_retries=0)
    agent = Agent(name="a", instructions="Be brief.",
                  model=OpenAIResponsesModel(model="fake-model", openai_client=client))
    items: list[Any] = []
    for i in range(100):
        text = f"Note {i}: the code word of day {i} is w{i}x{i * 7}."
        result = Runner.run_sync(agent, [*items, {"role": "user", "content": text}])
        assert result.final_output == f"echo: {text}"
        items = result.to_input_list()
    (cid,) = _conversations(proxy)
    mem = PagedMemory(store=proxy.state.store, conversation_id=cid, tenant="alice",
                      create=False)
    assert len(mem.turns) == 200 and mem.stats().evicted >= 10
    assert "[p1:" in proxy.upstream.received[-1]["messages"][0]["content"]
    result = Runner.run_sync(agent, [*items, {"role": "user",
                                              "content": "Day 0's code word? RECALL p1"}])
    assert "code word of day 0 is w0x0" in str(result.final_output)
    assert _conversations(proxy) == [cid]


def test_latest_previous_response_id_is_found_without_reading_the_conversation(
        proxy: Proxy, monkeypatch: pytest.MonkeyPatch) -> None:
    """The transcript index names the latest answer; only an older id (a fork, or a
    retry of the last turn) reads the stored conversation."""
    finder = proxy.state.service.finder
    calls: list[str] = []
    real = finder.locate

    def counting(*args: Any) -> Any:
        calls.append("locate")
        return real(*args)

    monkeypatch.setattr(finder, "locate", counting)
    c = Client(proxy, "responses-prev")
    for t in ("one", "two", "three"):
        c.say(t)
    assert calls == [], "each request continued the latest response by index lookup"
    first = proxy.client().responses.create(model="m", input="start")
    proxy.client().responses.create(model="m", input="next", previous_response_id=first.id)
    assert calls == []
    proxy.client().responses.create(model="m", input="fork", previous_response_id=first.id)
    assert calls == ["locate"], "an older response id reads the conversation"


@pytest.mark.parametrize("fmt", ["chat", "responses", "messages"])
def test_regenerate_starts_a_branch(proxy: Proxy, fmt: str) -> None:
    """The last question asked again by the SDK (a first attempt, not a retry) is a
    regenerate: a new branch; the original conversation stays as it was."""
    proxy.upstream.responder = lambda body: Reply(
        text=f"answer {len(proxy.upstream.received)}")
    c = Client(proxy, fmt)
    c.say("u1")
    before = list(c.history)
    first = c.say("u2")
    (cid,) = _conversations(proxy)
    c.history = before
    again = c.say("u2")
    assert again.text != first.text and again.conversation_id != cid
    assert len(_conversations(proxy)) == 2
    assert [t for _, t in _turns(proxy, cid)] == ["u1", _turns(proxy, cid)[1][1], "u2",
                                                  first.text]


def test_messages_upstream_error_mid_stream(proxy: Proxy) -> None:
    import anthropic

    proxy.upstream.responder = lambda body: Reply(text="one two three four", fail_after=2)
    ant = anthropic.Anthropic(base_url=proxy.url, api_key=KEY_A, max_retries=0)
    kinds: list[str] = []
    with (pytest.raises(anthropic.APIStatusError) as err,
          ant.messages.stream(model="m", max_tokens=32,
                              messages=[{"role": "user", "content": "hi"}]) as s):
        kinds.extend(e.type for e in s)
    assert "content_block_delta" in kinds and "message_stop" not in kinds
    assert "upstream" in str(err.value)
    assert all(not _turns(proxy, cid) for cid in _conversations(proxy)), "nothing stored"


def test_agents_sdk_streamed_run_with_a_tool(proxy: Proxy) -> None:
    import asyncio

    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)

    @function_tool
    def get_weather(city: str) -> str:
        """The weather of a city."""
        return f"18C in {city}"

    async def run() -> tuple[Any, list[str]]:
        client = AsyncOpenAI(base_url=proxy.url + "/v1", api_key=KEY_A, max_retries=0)
        agent = Agent(name="a", instructions="Be brief.", tools=[get_weather],
                      model=OpenAIResponsesModel(model="fake-model", openai_client=client))
        result = Runner.run_streamed(agent, "What is the WEATHER today?")
        kinds = [e.type async for e in result.stream_events()]
        return result, kinds

    result, kinds = asyncio.run(run())
    assert result.final_output == "tool said: 18C in Paris"
    assert "raw_response_event" in kinds
    (cid,) = _conversations(proxy)
    assert [r for r, _ in _turns(proxy, cid)] == ["user", "assistant", "tool", "assistant"]


def test_responses_upstream_streams_deltas(make_proxy: Callable[..., Proxy]) -> None:
    """A streaming client through an upstream speaking the Responses API gets the
    upstream's deltas as they come (not one piece), tool calls included."""
    from copage.core.config import PagerConfig

    b = make_proxy(paging=PagerConfig())
    a = make_proxy(upstream=b.url + "/v1", upstream_api="responses", upstream_key=KEY_A)
    client = a.client()
    stream = client.chat.completions.create(
        model="m", stream=True, messages=[{"role": "user", "content": "one two three four"}])
    pieces = [c.choices[0].delta.content for c in stream if c.choices and
              c.choices[0].delta.content]
    assert len(pieces) >= 4 and "".join(pieces) == "echo: one two three four"
    assert b.upstream.received[-1]["stream"] is True
    tools = [{"type": "function", "function": {"name": "get_weather",
                                               "parameters": {"type": "object"}}}]
    with client.chat.completions.stream(model="m", tools=tools, messages=[
            {"role": "user", "content": "the WEATHER?"}]) as s:
        comp = s.get_final_completion()
    (call,) = comp.choices[0].message.tool_calls or []
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris"}


def test_responses_items_of_a_whole_response_are_completed(proxy: Proxy) -> None:
    """A non-streamed ``responses.create`` is a finished response: its output items
    (the message, a client tool's function_call) have ``status: completed``, as
    OpenAI returns them and as ``response.completed`` and ``retrieve`` show them
    (they said ``in_progress``)."""
    client = proxy.client()
    said = client.responses.create(model="m", input="hello")
    assert said.status == "completed"
    assert [(o.type, o.status) for o in said.output] == [("message", "completed")]
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    called = client.responses.create(model="m", input="the WEATHER?", tools=[tool],
                                     previous_response_id=said.id)
    assert [(o.type, o.status) for o in called.output] == [("function_call", "completed")]
    with client.responses.stream(model="m", input="hi again",
                                 previous_response_id=called.id) as stream:
        for _ in stream:
            pass
        streamed = stream.get_final_response()
    assert [(o.type, o.status) for o in streamed.output] == [("message", "completed")]
    for made in (said, called, streamed):
        got = client.responses.retrieve(made.id)
        assert [(o.type, o.status) for o in got.output] == [
            (o.type, o.status) for o in made.output]


def test_responses_reasoning_effort_reaches_the_upstream(proxy: Proxy) -> None:
    """``reasoning={"effort": ...}`` (the Responses API's, and the Agents SDK's
    ``ModelSettings(reasoning=...)``) is the Chat Completions ``reasoning_effort`` (it was
    dropped); a ``reasoning`` that is not an object is a 400 naming it."""
    client = proxy.client()
    client.responses.create(model="m", input="think", reasoning={"effort": "low"})
    assert proxy.upstream.received[-1]["reasoning_effort"] == "low"
    client.responses.create(model="m", input="think less")
    assert "reasoning_effort" not in proxy.upstream.received[-1]
    with pytest.raises(openai.BadRequestError) as err:
        client.responses.create(model="m", input="x", reasoning="low")  # type: ignore[arg-type]
    assert err.value.param == "reasoning"


@pytest.mark.parametrize("fmt", FORMATS)
def test_inspector_shows_tool_calls_paired_with_their_results(proxy: Proxy, fmt: str) -> None:
    """The inspector JSON names each stored call and the call id its result answers.

    Seen with Qwen2.5-Coder through every API: the assistant turn of a tool call came
    back as ``{"role": "assistant", "text": ""}`` and the result without its call id,
    so a user could not tell which call a result answers (the store holds both).
    """
    import httpx

    c = Client(proxy, fmt, stream=False, tools=True)
    seen = c.say("What is the WEATHER in Paris?")
    call_id = seen.calls[0][0]
    c.tool_result(call_id, "18C and sunny")
    (cid,) = _conversations(proxy)
    r = httpx.get(f"{proxy.url}/ui/api/conversations/{cid}",
                  headers={"authorization": f"Bearer {KEY_A}"}, timeout=30)
    assert r.status_code == 200, r.text
    view = r.json()
    turns = [t for page in view["pages"] for t in page["turns"]] + view["open_turns"]
    assert [t["role"] for t in turns] == ["user", "assistant", "tool", "assistant"]
    [call] = turns[1]["tool_calls"]
    assert (call["id"], call["name"]) == (call_id, "get_weather")
    assert json.loads(call["arguments"]) == {"city": "Paris"}
    assert turns[2]["tool_call_id"] == call_id and turns[2]["text"] == "18C and sunny"
    assert "tool_calls" not in turns[0] and "tool_call_id" not in turns[3]
