"""Upstream failures and malformed input come back as OpenAI-format errors; nothing is stored."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import openai
import pytest
from proxy_helpers import KEY_A, KEY_B, UPSTREAM_KEY, Proxy

from copage.llm.fake_server import Reply


def _post(proxy: Proxy, body: Any, *, raw: bytes | None = None, key: str = KEY_A,
          headers: dict[str, str] | None = None) -> httpx.Response:
    content = raw if raw is not None else json.dumps(body).encode()
    return httpx.post(proxy.url + "/v1/chat/completions", content=content, timeout=10,
                      headers={"authorization": f"Bearer {key}",
                               "content-type": "application/json", **(headers or {})})


def _assert_error(r: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert set(err) >= {"message", "type", "code"} and err["message"]
    if code:
        assert err["code"] == code
    return dict(err)


@pytest.mark.parametrize(("reply", "status", "exc", "level"), [
    (Reply(status=500, error="boom"), 502, openai.InternalServerError, logging.WARNING),
    (Reply(status=429, error="slow down"), 429, openai.RateLimitError, logging.WARNING),
    (Reply(status=401, error=f"Incorrect API key provided: {UPSTREAM_KEY}"), 401,
     openai.AuthenticationError, logging.INFO),
])
def test_upstream_errors_map_and_leave_conversation(
        proxy: Proxy, reply: Reply, status: int, exc: type[Exception], level: int,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="copage.server")
    c = proxy.client(default_headers={"X-Copage-Conversation": "conv-e"})
    c.chat.completions.create(model="m", messages=[{"role": "user", "content": "first"}])
    store = proxy.state.store
    before = store.load("conv-e", tenant="alice")
    proxy.upstream.responder = lambda body: reply
    with pytest.raises(exc) as info:
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "second"}])
    assert info.value.status_code == status  # type: ignore[attr-defined]
    body = info.value.body  # type: ignore[attr-defined]
    assert UPSTREAM_KEY not in json.dumps(body) and KEY_A not in json.dumps(body)
    after = store.load("conv-e", tenant="alice")
    assert after.version == before.version and len(after.turns) == 2
    # the operator's log says so too (at WARNING when the upstream is failing), key redacted
    logged = [r for r in caplog.records if "upstream failure" in r.getMessage()]
    assert [r.levelno for r in logged] == [level]
    assert f"answered {status}" in logged[0].getMessage()
    assert UPSTREAM_KEY not in caplog.text


def test_upstream_timeout_is_504(make_proxy: Any) -> None:
    proxy = make_proxy(upstream_timeout=0.3)
    proxy.upstream.responder = lambda body: Reply(text="late", delay=1.0)
    r = _post(proxy, {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    _assert_error(r, 504, "upstream_timeout")
    assert proxy.state.store.list_conversations(tenant="alice") == []


def test_recall_in_a_failed_turn_is_rolled_back(proxy: Proxy) -> None:
    c = proxy.client(default_headers={"X-Copage-Conversation": "conv-r"})
    for t in ("one", "two", "three"):
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": t}])
    before = proxy.state.store.load("conv-r", tenant="alice")
    calls = {"n": 0}

    def fail_after_recall(body: dict[str, Any]) -> Reply:
        calls["n"] += 1
        return Reply(tool_calls=[("recall", {"page": "p1"})]) if calls["n"] == 1 else Reply(
            status=503, error="down")

    proxy.upstream.responder = fail_after_recall
    with pytest.raises(openai.InternalServerError):
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
    after = proxy.state.store.load("conv-r", tenant="alice")
    assert after.version == before.version and after.state == before.state


@pytest.mark.parametrize(("body", "code"), [
    ({"model": "m"}, None),
    ({"model": "m", "messages": "hi"}, None),
    ({"model": 3, "messages": [{"role": "user", "content": "x"}]}, None),
    ({"model": "m", "messages": [{"role": "wizard", "content": "x"}]}, None),
    ({"model": "m", "messages": [{"role": "user", "content": 5}]}, None),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": "yes"}, None),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": "hot"}, None),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": [{"x": 1}]}, None),
    ({"model": "m", "messages": [{"role": "tool", "content": "x"}]}, None),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}] * 51}, "too_many_messages"),
    ({"model": "m", "messages": [{"role": "user", "content": "x"},
                                 {"role": "assistant", "content": "y"}]}, None),
    ([1, 2], "invalid_json"),
])
def test_malformed_requests_are_400(make_proxy: Any, body: Any, code: str | None) -> None:
    proxy = make_proxy(max_messages=50)
    _assert_error(_post(proxy, body), 400, code)
    ok = _post(proxy, {"model": "m", "messages": [{"role": "user", "content": "still here"}]})
    assert ok.status_code == 200


def test_bad_json_bad_id_big_body_and_auth(make_proxy: Any) -> None:
    proxy = make_proxy(max_body_bytes=2000)
    _assert_error(_post(proxy, None, raw=b'{"model": "m", "messages": ['), 400, "invalid_json")
    msg = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    for bad in ("../etc", "a" * 200, "has space", "-lead", ""):
        r = _post(proxy, msg, headers={"X-Copage-Conversation": bad})
        _assert_error(r, 400, "invalid_conversation_id")
    big = {"model": "m", "messages": [{"role": "user", "content": "x" * 5000}]}
    _assert_error(_post(proxy, big), 413, "request_too_large")
    _assert_error(_post(proxy, msg, key="sk-wrong-key-000000"), 401, "invalid_api_key")
    r = httpx.post(proxy.url + "/v1/chat/completions", json=msg)
    _assert_error(r, 401, "invalid_api_key")
    _assert_error(httpx.get(proxy.url + "/v1/nope"), 404)
    assert _post(proxy, msg, key=KEY_B).status_code == 200


def test_recall_cap_refuses_extra_recalls(make_proxy: Any) -> None:
    proxy = make_proxy(max_recalls=1)
    c = proxy.client(default_headers={"X-Copage-Conversation": "capped"})
    for t in ("one", "two", "three"):
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": t}])
    n = {"calls": 0}

    def greedy(body: dict[str, Any]) -> Reply:
        n["calls"] += 1
        if body.get("tool_choice") == "none":
            return Reply(text="fine, answering")
        return Reply(tool_calls=[("recall", {"page": "p1"}), ("recall", {"page": "p2"})])

    proxy.upstream.responder = greedy
    raw = c.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "q"}])
    assert raw.parse().choices[0].message.content == "fine, answering"
    tool_msgs = [m for m in proxy.upstream.received[-1]["messages"] if m["role"] == "tool"]
    assert "limit of 1 recall" in tool_msgs[-1]["content"]
    assert json.loads(raw.headers["x-copage-stats"])["recalls"] == 2


LLAMA_OVERFLOW = ('{"error":{"code":400,"message":"request (6520 tokens) exceeds the available '
                  'context size (4096 tokens), try increasing it","type":"exceed_context_size_error",'
                  '"n_prompt_tokens":6520,"n_ctx":4096}}')


def test_a_request_too_long_for_the_models_window_says_what_to_do(proxy: Proxy) -> None:
    """llama.cpp's server (and OpenAI, Anthropic, vLLM) answer 400 when a conversation
    does not fit the model's window: the client gets OpenAI's code for it and, in the
    message, the paging budget that would fit; nothing is stored."""
    c = proxy.client(default_headers={"X-Copage-Conversation": "conv-w"})
    c.chat.completions.create(model="m", messages=[{"role": "user", "content": "first"}])
    proxy.upstream.responder = lambda body: Reply(status=400, error=LLAMA_OVERFLOW)
    with pytest.raises(openai.BadRequestError) as info:
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "second"}])
    err = info.value.body
    assert isinstance(err, dict) and err["code"] == "context_length_exceeded"
    assert "4096 tokens" in err["message"] and "--budget-tokens 1600" in err["message"]
    assert len(proxy.state.store.load("conv-w", tenant="alice").turns) == 2
