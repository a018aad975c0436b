"""The proxy driven by the official openai SDK against a scripted loopback upstream."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from proxy_helpers import KEY_A, UPSTREAM_KEY, Proxy, stats

FACTS = ["My sister Marta lives in Lisbon.", "I am allergic to peanuts.",
         "My budget is 450 dollars.", "The meeting moved to Thursday."]


def _chat(proxy: Proxy, history: list[dict[str, Any]], text: str, **kw: Any) -> Any:
    history.append({"role": "user", "content": text})
    raw = proxy.client().chat.completions.with_raw_response.create(
        model="fake-model", messages=history, **kw)
    comp = raw.parse()
    history.append(comp.choices[0].message.model_dump(exclude_none=True))
    return raw, comp


def test_transparent_mode_pages_and_recalls(proxy: Proxy) -> None:
    history: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    ids = set()
    for fact in FACTS:
        raw, comp = _chat(proxy, history, fact)
        ids.add(raw.headers["x-copage-conversation"])
        assert comp.choices[0].message.content == f"echo: {fact}"
    assert len(ids) == 1, "a client resending its history continues one conversation"
    sent = proxy.upstream.received[-1]
    system = sent["messages"][0]["content"]
    assert sent["messages"][0]["role"] == "system" and system.startswith("Be brief.")
    assert "[p1:" in system and "[p2:" in system, "bookmarks of evicted pages are sent"
    wire = json.dumps(sent["messages"])
    assert FACTS[0] not in wire and FACTS[1] not in wire, "evicted text is not sent"
    assert FACTS[3] in wire, "the open page is sent"
    assert [t["function"]["name"] for t in sent["tools"]] == ["recall"]
    # The model recalls p1: the proxy serves it and returns only the final answer.
    n_before = len(proxy.upstream.received)
    raw, comp = _chat(proxy, history, "Where does my sister live? RECALL p1")
    assert raw.headers["x-copage-conversation"] in ids
    calls = proxy.upstream.received[n_before:]
    assert len(calls) == 2
    follow = calls[1]["messages"]
    assert follow[-2]["role"] == "assistant" and follow[-2]["tool_calls"][0]["function"][
        "name"] == "recall"
    assert follow[-1]["role"] == "tool" and follow[-1]["tool_call_id"] == follow[-2][
        "tool_calls"][0]["id"]
    assert '<page id="p1">' in follow[-1]["content"] and "Marta" in follow[-1]["content"]
    msg = comp.choices[0].message
    assert msg.tool_calls is None and msg.content.startswith("tool said: <page id=\"p1\">")
    assert comp.usage.prompt_tokens == 20 and comp.usage.completion_tokens == 10
    st = stats(raw.headers)
    assert st["recalls"] == 1 and st["recalled"] == ["p1"] and st["faults"] == 1
    assert st["prompt_tokens"] > 0 and st["full_tokens"] > 0
    # upstream got the upstream key, never the proxy key
    assert proxy.upstream.headers[-1]["authorization"] == f"Bearer {UPSTREAM_KEY}"
    assert all(KEY_A not in json.dumps(b) for b in proxy.upstream.received)


def test_header_mode_with_only_new_messages(proxy: Proxy) -> None:
    c = proxy.client(default_headers={"X-Copage-Conversation": "my-chat-1"})
    for fact in FACTS:
        raw = c.chat.completions.with_raw_response.create(
            model="fake-model", messages=[{"role": "user", "content": fact}])
        assert raw.headers["x-copage-conversation"] == "my-chat-1"
    mem_turns = [t.text for t in _memory(proxy, "alice", "my-chat-1").turns]
    assert mem_turns == [x for f in FACTS for x in (f, f"echo: {f}")]
    # resending the whole history under the header does not duplicate turns
    history = [{"role": r, "content": t} for t, r in zip(
        mem_turns, ["user", "assistant"] * 4, strict=True)]
    c.chat.completions.create(model="fake-model",
                              messages=[*history, {"role": "user", "content": "next"}])
    assert len(_memory(proxy, "alice", "my-chat-1").turns) == 10


def _memory(proxy: Proxy, tenant: str, cid: str) -> Any:
    from copage.memory import PagedMemory

    return PagedMemory(store=proxy.state.store, conversation_id=cid, tenant=tenant)


@pytest.mark.parametrize("store", ["memory://", "sqlite"])
def test_streaming_matches_non_streaming(make_proxy: Any, store: str) -> None:
    proxy = make_proxy(store=store)
    c = proxy.client()
    history = [{"role": "user", "content": "hello"}]
    stream = c.chat.completions.create(model="fake-model", messages=history, stream=True,
                                       stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text == "echo: hello"
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 15
    finish = [ch.choices[0].finish_reason for ch in chunks if ch.choices]
    assert finish[-1] == "stop"
    # the streamed answer was stored: the next non-streamed turn continues it
    history += [{"role": "assistant", "content": text}, {"role": "user", "content": "again"}]
    raw = c.chat.completions.with_raw_response.create(model="fake-model", messages=history)
    assert stats(raw.headers)["pages"] >= 1
    assert len(proxy.state.store.list_conversations(tenant="alice")) == 1


WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "weather of a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}


@pytest.mark.parametrize("stream", [False, True])
def test_client_tools_go_back_to_the_client(proxy: Proxy, stream: bool) -> None:
    c = proxy.client()
    history: list[dict[str, Any]] = [{"role": "user", "content": "WEATHER please"}]
    if stream:
        chunks = list(c.chat.completions.create(model="fake-model", messages=history,
                                                tools=[WEATHER_TOOL], stream=True))
        calls = [tc for ch in chunks if ch.choices for tc in (ch.choices[0].delta.tool_calls or [])]
        assert len(calls) > 1, "the call's arguments arrive as deltas"
        assert {tc.index for tc in calls} == {0}
        assert [tc.function.name for tc in calls if tc.function.name] == ["get_weather"]
        assert json.loads("".join(tc.function.arguments or "" for tc in calls)) == {
            "city": "Paris"}
        call_id = calls[0].id
        finish = [ch.choices[0].finish_reason for ch in chunks if ch.choices][-1]
        assert finish == "tool_calls"
        history.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {
                "name": "get_weather",
                "arguments": "".join(tc.function.arguments or "" for tc in calls)}}]})
    else:
        comp = c.chat.completions.create(model="fake-model", messages=history,
                                         tools=[WEATHER_TOOL])
        msg = comp.choices[0].message
        assert comp.choices[0].finish_reason == "tool_calls"
        assert msg.tool_calls[0].function.name == "get_weather"
        call_id = msg.tool_calls[0].id
        history.append(msg.model_dump(exclude_none=True))
    sent_tools = [t["function"]["name"] for t in proxy.upstream.received[-1]["tools"]]
    assert sent_tools == ["get_weather"]  # nothing is evicted yet: copage adds no tool
    history.append({"role": "tool", "tool_call_id": call_id, "content": "sunny, 21C"})
    raw = c.chat.completions.with_raw_response.create(model="fake-model", messages=history,
                                                      tools=[WEATHER_TOOL])
    assert raw.parse().choices[0].message.content == "tool said: sunny, 21C"
    sent = proxy.upstream.received[-1]["messages"]
    pair = [m for m in sent if m.get("tool_calls") or m["role"] == "tool"]
    assert pair[0]["tool_calls"][0]["id"] == call_id and pair[1]["tool_call_id"] == call_id
    assert len(proxy.state.store.list_conversations(tenant="alice")) == 1


def test_client_tool_named_recall_renames_copages(proxy: Proxy) -> None:
    tool = {"type": "function", "function": {"name": "recall", "parameters": {"type": "object"}}}
    c = proxy.client(default_headers={"X-Copage-Conversation": "renamed"})
    for text in ("one", "two", "three", "four"):  # pages of 2 turns, 1 resident: p1 evicted
        c.chat.completions.create(model="fake-model", tools=[tool],
                                  messages=[{"role": "user", "content": text}])
    names = [t["function"]["name"] for t in proxy.upstream.received[-1]["tools"]]
    assert names == ["copage_recall", "recall"]
    assert "`copage_recall`" in proxy.upstream.received[-1]["messages"][0]["content"]


def test_models_health_metrics(proxy: Proxy) -> None:
    c = proxy.client()
    assert [m.id for m in c.models.list()] == ["fake-model"]
    c.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "x"}])
    import httpx

    assert httpx.get(proxy.url + "/healthz").json() == {"status": "ok"}
    text = httpx.get(proxy.url + "/metrics", headers={"authorization": f"Bearer {KEY_A}"}).text
    assert 'copage_requests_total{endpoint="chat",status="200"} 1' in text
    assert "copage_upstream_latency_seconds_count 1" in text
    assert "copage_prompt_tokens_full_total" in text


def test_metrics_count_prompt_tokens_repeating_the_previous_prefix(proxy: Proxy) -> None:
    c = proxy.client(default_headers={"X-Copage-Conversation": "cached"})
    history: list[dict[str, str]] = []
    for text in ("one", "two", "three"):
        history.append({"role": "user", "content": text})
        reply = c.chat.completions.create(model="fake-model", messages=history)
        history.append({"role": "assistant", "content": reply.choices[0].message.content or ""})
    text = proxy.state.metrics.render()
    sent = proxy.state.metrics.value("copage_prompt_cache_prompt_tokens_total")
    prefix = proxy.state.metrics.value("copage_prompt_cache_prefix_tokens_total")
    assert "copage_prompt_cache_prefix_tokens_total" in text
    assert 0 < prefix < sent  # later requests repeat the earlier ones' beginning
    # the cost with caching priced in, paged beside full context, per model: what the
    # conversation's stats() report
    mem = proxy.state.service.cache.take("alice", "cached")  # the warm object holds the meter
    assert mem is not None
    pc = mem.stats().prompt_cache
    assert pc is not None
    for model, costs in pc["cost_usd"].items():
        for kind in ("paged_cached", "full_cached"):
            value = proxy.state.metrics.value("copage_prompt_cache_cost_usd_total",
                                              model=model, kind=kind)
            assert value == pytest.approx(costs[kind]) and value > 0, (model, kind)
    assert 'copage_prompt_cache_cost_usd_total{kind="full_cached",model="gpt-4o-mini"}' in text


def test_speculative_mode_fills_before_the_question_over_http(make_proxy: Any) -> None:
    """``--recall-mode speculative`` (the default): the matching evicted page is shown
    just before the user's message, for this turn only; no recall tool is offered."""
    proxy = make_proxy(recall_mode="speculative")
    history: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    for fact in FACTS:
        _chat(proxy, history, fact)
    raw, _ = _chat(proxy, history, "Which city does my sister Marta live in?")
    assert json.loads(raw.headers["x-copage-stats"])["filled"][0] == "p1"  # what it showed
    sent = proxy.upstream.received[-1]
    assert "tools" not in sent or not sent["tools"]
    fill, question = sent["messages"][-2], sent["messages"][-1]
    assert question == {"role": "user", "content": "Which city does my sister Marta live in?"}
    assert fill["role"] == "user" and '<page id="p1">' in fill["content"]
    assert "Marta lives in Lisbon" in fill["content"]
    assert "[p1:" not in sent["messages"][0]["content"]  # the answer-only system text
    metrics = proxy.state.metrics
    shown = len(json.loads(raw.headers["x-copage-stats"])["filled"])
    assert metrics.value("copage_fills_total") == 1
    assert metrics.value("copage_fill_pages_total") == shown
    raw, _ = _chat(proxy, history, "thanks")  # the next turn: the fill is gone
    assert json.loads(raw.headers["x-copage-stats"])["filled"] == []
    assert metrics.value("copage_fills_total") == 1
    again = json.dumps(proxy.upstream.received[-1]["messages"])
    assert "Marta lives in Lisbon" not in again


def test_an_empty_upstream_reply_is_asked_again_once(upstream: Any, proxy: Proxy) -> None:
    """A small local model may answer nothing at all (``"content": ""``). The client's
    parser used to fail on it at once (502), so the loop's one retry of an empty reply
    never ran for a real upstream; now the proxy asks again and answers."""
    from copage.llm.fake_server import FakeReply, completion

    upstream.add(FakeReply(completion("")))
    history: list[dict[str, Any]] = []
    _, comp = _chat(proxy, history, "Hello there")
    assert comp.choices[0].message.content == "echo: Hello there"
    assert len(upstream.received) == 2
    # the provider billed the empty reply too: 10 + 2 tokens, then the echo's 10 + 5
    assert comp.usage.prompt_tokens == 20 and comp.usage.completion_tokens == 7
    upstream.add(FakeReply(completion("")), FakeReply(completion("")))
    with pytest.raises(openai.APIStatusError) as err:
        _chat(proxy, history, "Again")
    assert err.value.status_code == 502 and "empty reply twice" in str(err.value)
