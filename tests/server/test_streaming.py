"""Real streaming through the proxy (issue 9): deltas reach the client while the upstream
is still answering, recalls are served mid-stream, client tool calls arrive as deltas,
the turn is committed when the stream completes, a client that goes away stores nothing.

Clients are the official ``openai`` SDK, LangChain's ``ChatOpenAI`` and ``httpx``
(to close a connection mid-stream); the upstream is a loopback
:class:`~copage.llm.fake_server.FakeServer` that sleeps between chunks. Times are
``time.monotonic()`` in this process: the upstream runs in a thread of it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from proxy_helpers import KEY_A, KEY_B, Proxy, free_port, spawn_worker

from copage.llm.fake_server import FakeServer, Reply, echo
from copage.memory import PagedMemory
from copage.stores.protocol import ConversationNotFound

SLOW = "One two three four five six seven eight nine ten."
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
FACTS = ["My sister Marta lives in Lisbon.", "I am allergic to peanuts.",
         "My budget is 450 dollars.", "The meeting moved to Thursday."]


def slow(text: str = SLOW, pause: float = 0.15) -> Callable[[dict[str, Any]], Reply]:
    return lambda body: Reply(text=text, chunk_delay=pause)


def turns(proxy: Proxy, cid: str, tenant: str = "alice") -> list[tuple[str, str]]:
    """The stored turns (none for a conversation not stored)."""
    try:
        stored = proxy.state.store.load(cid, tenant=tenant)
    except ConversationNotFound:
        return []
    return [(t.role, t.text) for t in stored.turns]


def wait_for(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.02)


def sse_post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None,
             ) -> tuple[httpx.Client, Any]:
    """An open streamed response read with httpx (close the client to disconnect)."""
    http = httpx.Client(timeout=30)
    req = http.build_request("POST", url + "/v1/chat/completions", json=body, headers={
        "authorization": f"Bearer {KEY_A}", **(headers or {})})
    return http, http.send(req, stream=True)


def datas(lines: Any) -> Any:
    for line in lines:
        if line.startswith("data: "):
            yield line[6:]


# ------------------------------------------------------------------ time to first token
def test_openai_sdk_gets_the_first_delta_before_the_upstream_has_finished(
        make_proxy: Any, upstream: FakeServer) -> None:
    upstream.responder = slow()
    proxy = make_proxy(store="sqlite")
    raw = proxy.client().chat.completions.with_raw_response.create(
        model="fake-model", messages=[{"role": "user", "content": "count"}], stream=True,
        stream_options={"include_usage": True})
    first: float | None = None
    parts: list[str] = []
    chunks = []
    for ch in raw.parse():
        chunks.append(ch)
        if ch.choices and ch.choices[0].delta.content:
            first = first or time.monotonic()
            parts.append(ch.choices[0].delta.content)
    n = upstream.streamed[-1]
    assert first is not None and first < upstream.ended[n], "the first delta waited for the end"
    assert "".join(parts) == SLOW and len(parts) >= 5
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens == 15
    assert upstream.received[-1]["stream"] is True
    assert upstream.received[-1]["stream_options"] == {"include_usage": True}
    # committed when the stream completed: the stored answer is the streamed text
    cid = raw.headers["x-copage-conversation"]
    assert turns(proxy, cid) == [("user", "count"), ("assistant", SLOW)]
    copage = [ch.model_extra.get("copage_stats") for ch in chunks if ch.model_extra]
    assert next(s for s in copage if s)["upstream_calls"] == 1


def test_non_streaming_requests_consume_the_same_turn_without_streaming_upstream(
        proxy: Proxy) -> None:
    comp = proxy.client().chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "hello"}])
    assert comp.choices[0].message.content == "echo: hello"
    assert "stream" not in proxy.upstream.received[-1]


def test_langchain_stream_yields_deltas_before_the_upstream_has_finished(
        make_proxy: Any, upstream: FakeServer) -> None:
    from langchain_openai import ChatOpenAI

    upstream.responder = slow()
    proxy = make_proxy()
    llm = ChatOpenAI(base_url=proxy.url + "/v1", api_key=KEY_A, model="fake-model",
                     max_retries=0, stream_usage=True)
    first: float | None = None
    acc: Any = None
    texts: list[str] = []
    for chunk in llm.stream("count for me"):
        if chunk.content:
            first = first or time.monotonic()
            texts.append(str(chunk.content))
        acc = chunk if acc is None else acc + chunk
    n = upstream.streamed[-1]
    assert first is not None and first < upstream.ended[n]
    assert len(texts) >= 5 and "".join(texts) == SLOW
    assert acc.usage_metadata["total_tokens"] == 15
    # LangChain sends the history back: the same conversation continues (transparent)
    upstream.responder = echo
    history = [("human", "count for me"), ("ai", acc.content), ("human", "again")]
    assert "".join(str(c.content) for c in llm.stream(history)) == "echo: again"
    convs = proxy.state.store.list_conversations(tenant="alice")
    assert len(convs) == 1 and len(turns(proxy, convs[0].id)) == 4


# ------------------------------------------------------------------ recall mid-stream
def _facts_then(proxy: Proxy, question: str) -> list[dict[str, Any]]:
    c = proxy.client()
    history: list[dict[str, Any]] = []
    for fact in FACTS:
        history.append({"role": "user", "content": fact})
        comp = c.chat.completions.create(model="fake-model", messages=history)
        history.append({"role": "assistant", "content": comp.choices[0].message.content})
    return [*history, {"role": "user", "content": question}]


def test_a_recall_between_two_streamed_replies_streams_both(
        make_proxy: Any, upstream: FakeServer) -> None:
    before = "Let me look at the first page."
    after = "Your sister Marta lives in Lisbon."

    def respond(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply(text=after, chunk_delay=0.1)
        if "sister" in (last.get("content") or "") and body.get("tools"):
            return Reply(text=before, tool_calls=[("recall", {"page": "p1"})], chunk_delay=0.1)
        return echo(body)

    upstream.responder = respond
    proxy = make_proxy()
    history = _facts_then(proxy, "Where does my sister live?")
    n0 = len(upstream.received)
    raw = proxy.client().chat.completions.with_raw_response.create(
        model="fake-model", messages=history, stream=True, stream_options={"include_usage": True})
    got: list[tuple[float, str]] = []
    chunks = []
    for ch in raw.parse():
        chunks.append(ch)
        if ch.choices and ch.choices[0].delta.content:
            got.append((time.monotonic(), ch.choices[0].delta.content))
    first_call, second_call = n0 + 1, n0 + 2
    assert upstream.streamed[-2:] == [first_call, second_call]
    text = "".join(t for _, t in got)
    assert text == f"{before}\n\n{after}"
    # the first reply's text reached the client before the first upstream call ended
    assert got[0][0] < upstream.ended[first_call] and got[0][1] in before
    # ... and the second reply's text before the second ended
    in_after = [t for t, part in got if part.strip() and part.strip() in after]
    assert in_after and in_after[0] < upstream.ended[second_call]
    follow = upstream.received[-1]["messages"]
    assert follow[-1]["role"] == "tool" and "Marta" in follow[-1]["content"]
    assert follow[-2]["content"] == before  # the text before the call went back upstream
    assert chunks[-1].usage.prompt_tokens == 20 and chunks[-1].usage.completion_tokens == 10
    final = next(ch for ch in chunks if ch.choices and ch.choices[0].finish_reason)
    assert final.model_extra["copage_stats"]["recalled"] == ["p1"]
    cid = raw.headers["x-copage-conversation"]
    assert turns(proxy, cid)[-1] == ("assistant", text)
    # the client continues from the streamed text: the same conversation
    history += [{"role": "assistant", "content": text}, {"role": "user", "content": "ok"}]
    again = proxy.client().chat.completions.with_raw_response.create(
        model="fake-model", messages=history)
    assert again.headers["x-copage-conversation"] == cid


# ------------------------------------------------------------------ client tool calls
def test_client_tool_call_streams_as_deltas_and_the_sdk_accumulates_it(proxy: Proxy) -> None:
    c = proxy.client()
    messages: list[dict[str, Any]] = [{"role": "user", "content": "WEATHER in Paris"}]
    kinds: list[str] = []
    with c.chat.completions.stream(model="fake-model", messages=messages,  # type: ignore[arg-type]
                                   tools=[WEATHER_TOOL]) as s:  # type: ignore[list-item]
        for event in s:
            kinds.append(event.type)
        final = s.get_final_completion()
    assert kinds.count("tool_calls.function.arguments.delta") >= 2, kinds
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls or []
    assert call.function.name == "get_weather"  # type: ignore[union-attr]
    assert json.loads(call.function.arguments) == {"city": "Paris"}  # type: ignore[union-attr]
    cid = proxy.state.store.list_conversations(tenant="alice")[0].id
    stored = proxy.state.store.load(cid, tenant="alice").turns[-1].tool_calls
    assert [(t.id, t.name) for t in stored] == [(call.id, "get_weather")]


def test_langchain_tool_round_trip_streamed_continues_one_conversation(proxy: Proxy) -> None:
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=proxy.url + "/v1", api_key=KEY_A, model="fake-model",
                     max_retries=0).bind_tools([WEATHER_TOOL])
    msgs: list[Any] = [HumanMessage("WEATHER in Paris?")]
    acc: Any = None
    pieces = 0
    for chunk in llm.stream(msgs):
        pieces += bool(chunk.tool_call_chunks)
        acc = chunk if acc is None else acc + chunk
    assert pieces >= 2, "the call's arguments arrived in pieces"
    [tc] = acc.tool_calls
    assert tc["name"] == "get_weather" and tc["args"] == {"city": "Paris"}
    msgs += [acc, ToolMessage("sunny, 21C", tool_call_id=tc["id"])]
    answer = "".join(str(c.content) for c in llm.stream(msgs))
    assert answer == "tool said: sunny, 21C"
    convs = proxy.state.store.list_conversations(tenant="alice")
    assert len(convs) == 1, "the streamed tool round trip forked a new conversation"
    assert [r for r, _ in turns(proxy, convs[0].id)] == ["user", "assistant", "tool", "assistant"]


# ------------------------------------------------------------------ disconnects and errors
def test_client_closing_mid_stream_stores_nothing_and_releases_the_conversation(
        make_proxy: Any, upstream: FakeServer) -> None:
    proxy = make_proxy(store="sqlite")
    cid = "closer-1"
    hdr = {"X-Copage-Conversation": cid}
    proxy.client(default_headers=hdr).chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "first"}])
    upstream.responder = slow(pause=0.2)
    n = len(upstream.received) + 1
    http, resp = sse_post(proxy.url, {"model": "fake-model", "stream": True, "messages": [
        {"role": "user", "content": "second"}]}, hdr)
    try:
        assert resp.status_code == 200 and resp.headers["x-copage-conversation"] == cid
        for data in datas(resp.iter_lines()):
            delta = json.loads(data)["choices"][0]["delta"]
            if delta.get("content"):
                break
    finally:
        resp.close()
        http.close()  # the connection goes away mid-stream
    wait_for(lambda: "copage_stream_disconnects_total 1" in proxy.state.metrics.render())
    assert turns(proxy, cid) == [("user", "first"), ("assistant", "echo: first")]
    # the upstream call was cancelled with the turn, not read to its end
    time.sleep(2.5)
    assert n not in upstream.streamed
    # the conversation is free at once; the retried question is stored once
    upstream.responder = echo
    t0 = time.monotonic()
    proxy.client(default_headers=hdr).chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "second"}])
    assert time.monotonic() - t0 < 5
    assert [t for _, t in turns(proxy, cid)] == ["first", "echo: first", "second", "echo: second"]


def test_transparent_first_turn_disconnected_leaves_no_conversation(
        make_proxy: Any, upstream: FakeServer) -> None:
    upstream.responder = slow(pause=0.2)
    proxy = make_proxy(store="sqlite")
    http, resp = sse_post(proxy.url, {"model": "fake-model", "stream": True, "messages": [
        {"role": "user", "content": "hello"}]})
    try:
        next(d for d in datas(resp.iter_lines()) if json.loads(d)["choices"][0]["delta"].get(
            "content"))
    finally:
        resp.close()
        http.close()
    wait_for(lambda: "copage_stream_disconnects_total 1" in proxy.state.metrics.render())
    wait_for(lambda: not proxy.state.service._locks)
    assert proxy.state.store.list_conversations(tenant="alice") == []


def test_upstream_error_mid_stream_is_an_sse_error_event_and_nothing_is_stored(
        make_proxy: Any, upstream: FakeServer) -> None:
    proxy = make_proxy(store="sqlite")
    hdr = {"X-Copage-Conversation": "err-1"}
    c = proxy.client(default_headers=hdr)
    c.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "a"}])
    upstream.responder = lambda body: Reply(text=SLOW, fail_after=3, error="model crashed")
    got: list[str] = []
    with pytest.raises(openai.APIError) as err:
        for ch in c.chat.completions.create(model="fake-model", stream=True,
                                            messages=[{"role": "user", "content": "b"}]):
            if ch.choices and ch.choices[0].delta.content:
                got.append(ch.choices[0].delta.content)
    assert "".join(got) == "One two three"
    assert "model crashed" in str(err.value) and err.value.code == "upstream_error"
    assert turns(proxy, "err-1") == [("user", "a"), ("assistant", "echo: a")]
    assert 'copage_stream_errors_total{code="upstream_error"} 1' in proxy.state.metrics.render()
    # the raw stream: the error event is the last one, no [DONE]
    http, resp = sse_post(proxy.url, {"model": "fake-model", "stream": True, "messages": [
        {"role": "user", "content": "b"}]}, hdr)
    try:
        events = list(datas(resp.iter_lines()))
    finally:
        resp.close()
        http.close()
    assert "[DONE]" not in events
    assert json.loads(events[-1]) == {"error": {
        "message": "upstream error: upstream: the upstream failed mid-stream: model crashed",
        "type": "upstream_error", "code": "upstream_error", "param": None}}


def test_errors_before_the_first_token_are_http_errors(
        make_proxy: Any, upstream: FakeServer) -> None:
    upstream.responder = lambda body: Reply(status=429, error="slow down")
    proxy = make_proxy()
    with pytest.raises(openai.RateLimitError):
        proxy.client().chat.completions.create(
            model="fake-model", stream=True, messages=[{"role": "user", "content": "x"}])
    assert proxy.state.store.list_conversations(tenant="alice") == []


def test_a_busy_conversation_is_409_before_the_stream_starts(
        make_proxy: Any, upstream: FakeServer) -> None:
    upstream.responder = slow(pause=0.2)
    proxy = make_proxy(lock_timeout=0.3)
    hdr = {"X-Copage-Conversation": "busy-1"}
    http, resp = sse_post(proxy.url, {"model": "fake-model", "stream": True, "messages": [
        {"role": "user", "content": "long one"}]}, hdr)
    try:
        assert resp.status_code == 200
        with pytest.raises(openai.ConflictError):
            proxy.client(default_headers=hdr).chat.completions.create(
                model="fake-model", stream=True, messages=[{"role": "user", "content": "x"}])
        text = "".join(json.loads(d)["choices"][0]["delta"].get("content") or ""
                       for d in datas(resp.iter_lines()) if d != "[DONE]"
                       and json.loads(d)["choices"])
    finally:
        resp.close()
        http.close()
    assert text == SLOW
    assert turns(proxy, "busy-1") == [("user", "long one"), ("assistant", SLOW)]


def test_tenants_stream_apart(proxy: Proxy) -> None:
    for key in (KEY_A, KEY_B):
        chunks = list(proxy.client(key).chat.completions.create(
            model="fake-model", stream=True, messages=[{"role": "user", "content": "same"}]))
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
            "echo: same")
    a = proxy.state.store.list_conversations(tenant="alice")
    b = proxy.state.store.list_conversations(tenant="bob")
    assert len(a) == 1 and len(b) == 1 and a[0].id != b[0].id


# ------------------------------------------------------------------ retries
def test_sdk_retry_after_a_timeout_streams_the_answer_once(
        make_proxy: Any, upstream: FakeServer) -> None:
    calls: list[int] = []

    def respond(body: dict[str, Any]) -> Reply:
        calls.append(1)  # the first attempt is slower than the client's timeout
        return Reply(text="late answer", delay=4.0 if len(calls) == 1 else 0.0)

    upstream.responder = respond
    proxy = make_proxy(store="sqlite")
    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY_A, max_retries=1,
                           timeout=1.5, default_headers={"X-Copage-Conversation": "rt-1"})
    chunks = list(client.chat.completions.create(
        model="fake-model", stream=True, messages=[{"role": "user", "content": "q"}]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == (
        "late answer")
    assert len(calls) == 2  # the abandoned first attempt was rolled back, then run again
    assert turns(proxy, "rt-1") == [("user", "q"), ("assistant", "late answer")]


def test_retry_of_a_committed_stream_gets_the_stored_answer_streamed(
        make_proxy: Any, upstream: FakeServer) -> None:
    upstream.responder = slow(pause=0.1)
    proxy = make_proxy(store="sqlite")
    body = {"model": "fake-model", "stream": True, "messages": [
        {"role": "user", "content": "tell me"}]}
    key = {"Idempotency-Key": "k-123"}
    http, resp = sse_post(proxy.url, body, key)
    try:
        lines = resp.iter_lines()  # kept: a dropped iterator closes the connection
        assert next(lines).startswith("data: ")
        cid = resp.headers["x-copage-conversation"]
        # the upstream finished and the turn was committed; the client never read it
        wait_for(lambda: len(turns(proxy, cid)) == 2)
    finally:
        resp.close()
        http.close()
    n = len(upstream.received)
    raw = proxy.client(default_headers=key).chat.completions.with_raw_response.create(
        model="fake-model", stream=True, messages=body["messages"])
    chunks = list(raw.parse())
    assert raw.headers["x-copage-conversation"] == cid
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == SLOW
    final = next(c for c in chunks if c.choices and c.choices[0].finish_reason)
    assert final.model_extra["copage_stats"]["replayed"] is True
    assert len(upstream.received) == n, "a retry makes no upstream call"
    assert len(turns(proxy, cid)) == 2


def test_streamed_regenerate_branches(proxy: Proxy) -> None:
    hdr = {"X-Copage-Conversation": "regen-1"}
    c = proxy.client(default_headers=hdr)
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "a"}]
    comp = c.chat.completions.create(model="fake-model", messages=msgs)
    msgs += [{"role": "assistant", "content": comp.choices[0].message.content},
             {"role": "user", "content": "b"}]
    c.chat.completions.create(model="fake-model", messages=msgs)
    n = len(proxy.upstream.received)
    raw = c.chat.completions.with_raw_response.create(model="fake-model", messages=msgs,
                                                      stream=True)
    text = "".join(ch.choices[0].delta.content or "" for ch in raw.parse() if ch.choices)
    assert text == "echo: b" and len(proxy.upstream.received) == n + 1
    branch = raw.headers["x-copage-conversation"]
    assert branch != "regen-1"
    assert [t for _, t in turns(proxy, branch)] == ["a", "echo: a", "b", "echo: b"]
    assert len(turns(proxy, "regen-1")) == 4


# ------------------------------------------------------------------ a real process
def test_copage_serve_process_streams_at_the_default_log_level(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    db = tmp_path / "s.db"
    with FakeServer(slow()) as up, log.open("wb") as err:
        port = free_port()
        proc = spawn_worker(port, up.url, f"sqlite://{db}", log_level=None, stderr=err,
                            stdout=err)
        try:
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=KEY_A,
                                   max_retries=0, timeout=30)
            first: float | None = None
            text = ""
            raw = client.chat.completions.with_raw_response.create(
                model="fake-model", stream=True, messages=[{"role": "user", "content": "go"}])
            for ch in raw.parse():
                if ch.choices and ch.choices[0].delta.content:
                    first = first or time.monotonic()
                    text += ch.choices[0].delta.content
            assert first is not None and first < up.ended[up.streamed[-1]]
            assert text == SLOW
            cid = raw.headers["x-copage-conversation"]
            # a second turn abandoned mid-stream leaves the stored conversation as it was
            http, resp = sse_post(f"http://127.0.0.1:{port}", {
                "model": "fake-model", "stream": True, "messages": [
                    {"role": "user", "content": "go"}, {"role": "assistant", "content": text},
                    {"role": "user", "content": "more"}]})
            try:
                assert resp.headers["x-copage-conversation"] == cid
                lines = resp.iter_lines()
                next(lines)
            finally:
                resp.close()
                http.close()
            metrics = httpx.get(f"http://127.0.0.1:{port}/metrics",
                                headers={"authorization": f"Bearer {KEY_A}"})
            wait_for(lambda: "copage_stream_disconnects_total 1" in httpx.get(
                f"http://127.0.0.1:{port}/metrics",
                headers={"authorization": f"Bearer {KEY_A}"}).text)
            assert metrics.status_code == 200
        finally:
            proc.terminate()
            proc.wait(20)
    from copage.stores.sqlite import SQLiteStore

    store = SQLiteStore(db)
    try:
        mem = PagedMemory(store=store, conversation_id=cid, tenant="alice")
        assert [(t.role, t.text) for t in mem.turns] == [("user", "go"), ("assistant", SLOW)]
    finally:
        store.close()
    out = log.read_text()
    assert "Logging error" not in out and "Traceback" not in out, out[-3000:]
    assert out.count('"POST /v1/chat/completions HTTP/1.1" 200') == 2, out[-3000:]


def test_postgres_stream_commits_and_a_disconnect_rolls_back(
        make_proxy: Any, upstream: FakeServer, pg_url: str) -> None:
    """The store work of a PostgreSQL turn runs in the pool: the same states."""
    upstream.responder = slow(pause=0.1)
    proxy = make_proxy(store=pg_url)
    hdr = {"X-Copage-Conversation": "pg-1"}
    chunks = list(proxy.client(default_headers=hdr).chat.completions.create(
        model="fake-model", stream=True, messages=[{"role": "user", "content": "one"}]))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == SLOW
    upstream.responder = slow(pause=0.2)
    http, resp = sse_post(proxy.url, {"model": "fake-model", "stream": True, "messages": [
        {"role": "user", "content": "two"}]}, hdr)
    try:
        lines = resp.iter_lines()
        next(d for d in datas(lines) if json.loads(d)["choices"][0]["delta"].get("content"))
    finally:
        resp.close()
        http.close()
    wait_for(lambda: not proxy.state.service._locks)
    assert turns(proxy, "pg-1") == [("user", "one"), ("assistant", SLOW)]
    upstream.responder = echo
    proxy.client(default_headers=hdr).chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "two"}])
    assert [t for _, t in turns(proxy, "pg-1")][2:] == ["two", "echo: two"]
