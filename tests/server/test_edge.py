"""Keys, tenants, limits, idempotency keys and the browser guard hold for every client
format's endpoint exactly as for Chat Completions (raw HTTP, so each check sees the
status and the body the format answers with)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from proxy_helpers import KEY_A, KEY_B, Proxy

from copage.llm.fake_server import FakeServer
from copage.server.app import create_app
from copage.server.server_thread import ServerThread
from copage.server.settings import ServeSettings

PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses",
         "messages": "/v1/messages"}
FORMATS = list(PATHS)


def body(fmt: str, *texts: str, **extra: Any) -> dict[str, Any]:
    """A request of ``texts`` as alternating user/assistant messages in ``fmt``."""
    roles = ["user", "assistant"]
    msgs = [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)]
    if fmt == "responses":
        return {"model": "m", "input": msgs, **extra}
    if fmt == "messages":
        return {"model": "m", "max_tokens": 64, "messages": msgs, **extra}
    return {"model": "m", "messages": msgs, **extra}


def post(url: str, fmt: str, data: Any, key: str | None = KEY_A, **headers: str
         ) -> httpx.Response:
    hdrs = dict(headers)
    if key is not None:
        hdrs["authorization"] = f"Bearer {key}"
    if isinstance(data, bytes):
        return httpx.post(url + PATHS[fmt], content=data,
                          headers={"content-type": "application/json", **hdrs})
    return httpx.post(url + PATHS[fmt], json=data, headers=hdrs)


def error_code(fmt: str, r: httpx.Response) -> str:
    """The error's code (OpenAI shapes) or type (Anthropic's)."""
    data = r.json()
    if fmt == "messages":
        assert data["type"] == "error" and set(data["error"]) == {"type", "message"}
        return str(data["error"]["type"])
    return str(data["error"]["code"])


def answer(fmt: str, r: httpx.Response) -> str:
    data = r.json()
    if fmt == "responses":
        return "".join(p["text"] for o in data["output"] if o["type"] == "message"
                       for p in o["content"])
    if fmt == "messages":
        return "".join(b["text"] for b in data["content"] if b["type"] == "text")
    return str(data["choices"][0]["message"]["content"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_keys_and_tenants(proxy: Proxy, fmt: str) -> None:
    r = post(proxy.url, fmt, body(fmt, "alice secret 7319"))
    assert r.status_code == 200 and answer(fmt, r) == "echo: alice secret 7319"
    cid = r.headers["x-copage-conversation"]
    for bad in ("sk-wrong-key-000000", None):
        r = post(proxy.url, fmt, body(fmt, "x"), key=bad)
        assert r.status_code == 401
        assert error_code(fmt, r) in ("invalid_api_key", "authentication_error")
    # bob resending alice's transcript gets a conversation of his own
    hist = body(fmt, "alice secret 7319", "echo: alice secret 7319", "more")
    b = post(proxy.url, fmt, hist, key=KEY_B)
    assert b.status_code == 200 and b.headers["x-copage-conversation"] != cid
    a = post(proxy.url, fmt, hist)
    assert a.headers["x-copage-conversation"] == cid
    # bob naming alice's conversation id gets his own conversation of that name
    r = post(proxy.url, fmt, body(fmt, "bob here"), key=KEY_B,
             **{"X-Copage-Conversation": cid})
    assert r.status_code == 200
    assert "7319" not in json.dumps(proxy.upstream.received[-1])


def test_messages_endpoint_takes_x_api_key(proxy: Proxy) -> None:
    r = httpx.post(proxy.url + "/v1/messages", json=body("messages", "hi"),
                   headers={"x-api-key": KEY_B, "anthropic-version": "2023-06-01"})
    assert r.status_code == 200 and answer("messages", r) == "echo: hi"
    assert proxy.state.store.list_conversations(tenant="bob")


@pytest.mark.parametrize("fmt", FORMATS)
def test_limits(make_proxy: Callable[..., Proxy], fmt: str) -> None:
    proxy = make_proxy(max_body_bytes=3000, max_messages=4, max_tools=1)
    n = len(proxy.upstream.received)
    r = post(proxy.url, fmt, body(fmt, "x" * 5000))
    assert r.status_code == 413
    assert error_code(fmt, r) in ("request_too_large",)
    r = post(proxy.url, fmt, body(fmt, "a", "b", "c", "d", "e"))
    assert r.status_code == 400 and error_code(fmt, r) in ("too_many_messages",
                                                            "invalid_request_error")
    r = post(proxy.url, fmt, b'{"model": "m", "messages": [')
    assert r.status_code == 400 and error_code(fmt, r) in ("invalid_json",
                                                            "invalid_request_error")
    r = post(proxy.url, fmt, b'{"model": "m", "temperature": NaN, "input": "x", '
             b'"max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}')
    assert r.status_code == 400
    assert len(proxy.upstream.received) == n, "nothing reached the upstream"
    assert post(proxy.url, fmt, body(fmt, "fine")).status_code == 200


@pytest.mark.parametrize("fmt", FORMATS)
def test_idempotency_key(proxy: Proxy, fmt: str) -> None:
    key = {"Idempotency-Key": "key-1", "X-Copage-Conversation": "k"}
    first = post(proxy.url, fmt, body(fmt, "u1"), **key)
    again = post(proxy.url, fmt, body(fmt, "u1"), **key)
    assert answer(fmt, again) == answer(fmt, first)
    assert json.loads(again.headers["x-copage-stats"])["replayed"] is True
    assert sum(1 for b in proxy.upstream.received
               if b["messages"][-1]["content"] == "u1") == 1
    reused = post(proxy.url, fmt, body(fmt, "something else"), **key)
    assert reused.status_code == 422
    assert error_code(fmt, reused) in ("idempotency_key_reused", "invalid_request_error")


@pytest.fixture
def open_proxy(upstream: FakeServer) -> Iterator[ServerThread]:
    settings = ServeSettings(upstream=upstream.url, store="memory://")
    with ServerThread(create_app(settings)) as srv:
        yield srv


@pytest.mark.parametrize("fmt", FORMATS)
def test_browser_guard(open_proxy: ServerThread, upstream: FakeServer, fmt: str) -> None:
    url = open_proxy.url
    port = url.rsplit(":", 1)[1]
    n = len(upstream.received)
    raw = json.dumps(body(fmt, "hi"))
    r = httpx.post(url + PATHS[fmt], content=raw,
                   headers={"content-type": "text/plain", "origin": "https://evil.example"})
    assert r.status_code == 403
    assert error_code(fmt, r) in ("cross_origin", "permission_error")  # in fmt's shape
    r = httpx.post(url + PATHS[fmt], content=raw, headers={"content-type": "text/plain"})
    assert r.status_code == 415
    assert error_code(fmt, r) in ("unsupported_media_type", "invalid_request_error")
    assert "application/json" in json.dumps(r.json())
    r = httpx.post(url + PATHS[fmt], json=body(fmt, "hi"),
                   headers={"host": f"attacker.example:{port}"})
    assert r.status_code == 403
    assert error_code(fmt, r) in ("host_not_allowed", "permission_error")
    # no route under the endpoint, and a wrong method on it: in fmt's shape too
    r = httpx.post(url + PATHS[fmt] + "/no/such", json=body(fmt, "hi"))
    assert r.status_code == 404 and error_code(fmt, r) in ("not_found", "not_found_error")
    r = httpx.get(url + PATHS[fmt])
    assert r.status_code == 405
    assert error_code(fmt, r) in ("method_not_allowed", "invalid_request_error")
    assert len(upstream.received) == n, "nothing reached the upstream"
    assert httpx.post(url + PATHS[fmt], json=body(fmt, "hi")).status_code == 200
