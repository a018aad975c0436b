"""Tenants: a tenant never sees, continues or recalls another tenant's conversation."""

from __future__ import annotations

import json
import logging
from typing import Any

import httpx
import pytest
from proxy_helpers import KEY_A, KEY_B, UPSTREAM_KEY, Proxy

from copage.llm.fake_server import Reply

SECRET = "Alice's locker code is 7319."


def _ui(proxy: Proxy, path: str, key: str) -> httpx.Response:
    return httpx.get(f"{proxy.url}/ui/api/{path}", headers={"authorization": f"Bearer {key}"})


def test_tenants_are_isolated(proxy: Proxy) -> None:
    alice = proxy.client(KEY_A, default_headers={"X-Copage-Conversation": "shared-name"})
    alice.chat.completions.create(model="m", messages=[{"role": "user", "content": SECRET}])
    for t in ("filler one", "filler two", "filler three"):
        alice.chat.completions.create(model="m", messages=[{"role": "user", "content": t}])
    a_raw = proxy.client(KEY_A).chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": "transparent alice"}])
    a_transparent = a_raw.headers["x-copage-conversation"]
    # bob uses alice's ids: separate conversations in bob's space, recall sees nothing of hers
    for n, cid in enumerate(("shared-name", a_transparent)):
        bob = proxy.client(KEY_B, default_headers={"X-Copage-Conversation": cid})
        for t in (f"bob one {n}", f"bob two {n}", f"bob three {n}"):  # bob's own pages
            bob.chat.completions.create(model="m", messages=[{"role": "user", "content": t}])
        raw = bob.chat.completions.with_raw_response.create(
            model="m", messages=[{"role": "user", "content": "RECALL p1"}])
        assert raw.headers["x-copage-conversation"] == cid
        sent = json.dumps(proxy.upstream.received[-2:])
        assert "7319" not in sent and "filler" not in sent
        assert f"bob one {n}" in sent  # the recall served bob's own p1
    # bob resending alice's transcript (transparent mode) gets a new conversation
    hist = [{"role": "user", "content": "transparent alice"},
            {"role": "assistant", "content": "echo: transparent alice"},
            {"role": "user", "content": "more"}]
    b_raw = proxy.client(KEY_B).chat.completions.with_raw_response.create(model="m", messages=hist)
    assert b_raw.headers["x-copage-conversation"] != a_transparent
    a_again = proxy.client(KEY_A).chat.completions.with_raw_response.create(
        model="m", messages=hist)
    assert a_again.headers["x-copage-conversation"] == a_transparent
    # the inspector API
    a_list = {c["id"] for c in _ui(proxy, "conversations", KEY_A).json()["conversations"]}
    b_list = {c["id"] for c in _ui(proxy, "conversations", KEY_B).json()["conversations"]}
    assert a_transparent in a_list and b_raw.headers["x-copage-conversation"] not in a_list
    assert b_raw.headers["x-copage-conversation"] in b_list
    b_same_id = json.dumps(_ui(proxy, f"conversations/{a_transparent}", KEY_B).json())
    assert "transparent alice" not in b_same_id and "RECALL p1" in b_same_id
    a_detail = _ui(proxy, "conversations/shared-name", KEY_A).json()
    b_detail = _ui(proxy, "conversations/shared-name", KEY_B).json()
    assert "7319" in json.dumps(a_detail) and "7319" not in json.dumps(b_detail)
    guessed = _ui(proxy, f"conversations/{a_transparent}x", KEY_B)
    assert guessed.status_code == 404 and guessed.json()["error"]["code"]
    assert _ui(proxy, "conversations", "sk-nobody-12345678").status_code == 401


def test_new_conversation_ids_are_unguessable(proxy: Proxy) -> None:
    c = proxy.client()
    ids = {c.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": f"hi {i}"}]
    ).headers["x-copage-conversation"] for i in range(5)}
    assert len(ids) == 5 and all(len(i) >= 22 and i.startswith("c_") for i in ids)


def test_keys_never_logged(proxy: Proxy, caplog: pytest.LogCaptureFixture, capfd: Any) -> None:
    caplog.set_level(logging.DEBUG)
    proxy.upstream.responder = lambda body: Reply(
        status=401, error=f"Incorrect API key provided: {UPSTREAM_KEY} for {KEY_A}")
    r = httpx.post(proxy.url + "/v1/chat/completions",
                   headers={"authorization": f"Bearer {KEY_A}"},
                   json={"model": "m", "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 401
    async def broken(*args: Any, **kw: Any) -> Any:  # the turn every format runs
        raise RuntimeError(f"internal failure near {UPSTREAM_KEY} and {KEY_A}")
        yield  # an async generator, as ProxyService.turn

    proxy.state.service.turn = broken
    r2 = httpx.post(proxy.url + "/v1/chat/completions",
                    headers={"authorization": f"Bearer {KEY_A}"},
                    json={"model": "m", "messages": [{"role": "user", "content": "y"}]})
    assert r2.status_code == 500 and r2.json()["error"]["code"] == "internal_error"
    assert "internal failure near ***" in caplog.text
    logging.getLogger("copage.server").error("leak test %s %s", UPSTREAM_KEY, KEY_B)
    out, err = capfd.readouterr()
    everything = caplog.text + out + err + r.text + json.dumps(
        _ui(proxy, "conversations", KEY_A).json())
    assert "leak test" in caplog.text
    for secret in (UPSTREAM_KEY, KEY_A, KEY_B):
        assert secret not in everything
