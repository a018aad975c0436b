"""Busy conversations, large requests, browsers, upstream URLs, bad numbers, keys (issue 9)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from proxy_helpers import KEY_A, KEYS, UPSTREAM_KEY, Proxy, free_port

from copage.llm.fake_server import FakeServer, Reply
from copage.server.app import app_from_env, create_app
from copage.server.server_thread import ServerThread
from copage.server.settings import ServeSettings
from copage.stores.sqlite import SQLiteStore

AUTH = {"authorization": f"Bearer {KEY_A}"}


def _chat(url: str, body: Any, headers: dict[str, str] | None = None,
          timeout: float = 60) -> httpx.Response:
    return httpx.post(url + "/v1/chat/completions", json=body, timeout=timeout,
                      headers={**AUTH, **(headers or {})})


# ------------------------------------------------------------ 5: lock_timeout
def test_lock_timeout_bounds_waiters_of_one_worker(make_proxy: Callable[..., Proxy]) -> None:
    """Four requests on one conversation, each upstream call 3 s, lock_timeout 0.5 s:
    the first is answered, the others get 409 instead of queueing for 3, 6, 9 s."""
    proxy = make_proxy(lock_timeout=0.5)
    proxy.upstream.responder = lambda body: Reply(text="slow", delay=3.0)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with ThreadPoolExecutor(4) as ex:
        results = list(ex.map(lambda _: _chat(proxy.url, body, {"X-Copage-Conversation": "b"}),
                              range(4)))
    codes = sorted(r.status_code for r in results)
    assert codes.count(200) >= 1 and codes.count(409) >= 2, codes
    busy = [r for r in results if r.status_code == 409]
    assert all(r.json()["error"]["code"] == "conversation_busy" for r in busy)
    assert all(r.headers["retry-after"] == "1" for r in busy)


# ------------------------------------------------- 6: large requests off the loop
class _ThreadRecordingStore(SQLiteStore):
    """Records the thread of every write (the event loop runs in the server's thread)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.threads: list[str] = []

    def create_conversation(self, *args: Any, **kw: Any) -> None:
        self.threads.append(threading.current_thread().name)
        super().create_conversation(*args, **kw)

    def commit(self, *args: Any, **kw: Any) -> int:
        self.threads.append(threading.current_thread().name)
        return super().commit(*args, **kw)


@pytest.mark.parametrize("mode", ["header", "transparent"])
def test_large_first_request_is_paged_off_the_event_loop(
    tmp_path: Path, upstream: FakeServer, mode: str,
) -> None:
    store = _ThreadRecordingStore(tmp_path / "big.db")
    settings = ServeSettings(upstream=upstream.url, store="memory://", keys=KEYS,
                             upstream_key=UPSTREAM_KEY)
    msgs = []
    for i in range(999):
        msgs += [{"role": "user", "content": f"question {i} " + "x" * 600},
                 {"role": "assistant", "content": f"answer {i} " + "y" * 600}]
    msgs.append({"role": "user", "content": "and now?"})
    assert len(json.dumps(msgs)) > 1_000_000
    headers = {"X-Copage-Conversation": "big"} if mode == "header" else {}
    with ServerThread(create_app(settings, store=store)) as srv:
        r = _chat(srv.url, {"model": "m", "messages": msgs}, headers, timeout=120)
        assert r.status_code == 200, r.text
        assert store.threads and all(t.startswith("copage-store") for t in store.threads), \
            store.threads
        # small turns afterwards may run inline again
        r = _chat(srv.url, {"model": "m", "messages": [
            *msgs, r.json()["choices"][0]["message"], {"role": "user", "content": "more"}]},
            headers, timeout=120)
        assert r.status_code == 200
    turns = store.load(r.headers["x-copage-conversation"], tenant="alice").turns
    assert len(turns) == len(msgs) + 3
    store.close()


# ----------------------------------------------------------- 7: browser guard
@pytest.fixture
def open_proxy(upstream: FakeServer) -> Any:
    """A proxy with no keys (loopback mode), as ``copage serve`` starts by default."""
    settings = ServeSettings(upstream=upstream.url, store="memory://")
    with ServerThread(create_app(settings)) as srv:
        yield srv


HELLO = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_no_key_mode_refuses_rebound_host_names(open_proxy: ServerThread) -> None:
    url = open_proxy.url
    port = url.rsplit(":", 1)[1]
    ok = httpx.post(url + "/v1/chat/completions", json=HELLO)
    assert ok.status_code == 200
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "localhost"):
        assert httpx.get(url + "/ui/api/conversations", headers={"host": host}).status_code == 200
    for host in (f"attacker.example:{port}", "attacker.example", f"0.0.0.0:{port}"):
        r = httpx.get(url + "/ui/api/conversations", headers={"host": host})
        assert r.status_code == 403 and r.json()["error"]["code"] == "host_not_allowed"
        r = httpx.post(url + "/v1/chat/completions", json=HELLO, headers={"host": host})
        assert r.status_code == 403


def test_cross_origin_and_text_plain_bodies_are_refused(
    open_proxy: ServerThread, upstream: FakeServer,
) -> None:
    url = open_proxy.url
    n = len(upstream.received)
    # what a page on another site can send without a preflight
    r = httpx.post(url + "/v1/chat/completions", content=json.dumps(HELLO),
                   headers={"content-type": "text/plain", "origin": "https://evil.example"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "cross_origin"
    r = httpx.post(url + "/v1/chat/completions", content=json.dumps(HELLO),
                   headers={"content-type": "text/plain"})
    assert r.status_code == 415
    r = httpx.post(url + "/v1/chat/completions", content=json.dumps(HELLO),
                   headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 415
    r = httpx.get(url + "/ui/api/conversations", headers={"sec-fetch-site": "cross-site",
                                                          "sec-fetch-mode": "cors"})
    assert r.status_code == 403
    assert len(upstream.received) == n, "nothing reached the upstream"
    # the inspector's own page (same origin) still works
    same = url.replace("127.0.0.1", "localhost")
    r = httpx.get(same + "/ui/api/conversations", headers={"origin": same})
    assert r.status_code == 200


def test_cors_allows_listed_origins_only(upstream: FakeServer) -> None:
    settings = ServeSettings(upstream=upstream.url, store="memory://", keys=KEYS,
                             cors=("https://app.example",))
    with ServerThread(create_app(settings)) as srv:
        pre = httpx.options(srv.url + "/v1/chat/completions", headers={
            "origin": "https://app.example", "access-control-request-method": "POST",
            "access-control-request-headers": "authorization, content-type"})
        assert pre.status_code == 204
        assert pre.headers["access-control-allow-origin"] == "https://app.example"
        assert "authorization" in pre.headers["access-control-allow-headers"]
        r = _chat(srv.url, HELLO, {"origin": "https://app.example"})
        assert r.status_code == 200
        assert r.headers["access-control-allow-origin"] == "https://app.example"
        assert "x-copage-conversation" in r.headers["access-control-expose-headers"]
        r = _chat(srv.url, HELLO, {"origin": "https://other.example"})
        assert r.status_code == 403
        # with keys the Host is not restricted (behind a load balancer)
        r = _chat(srv.url, HELLO, {"host": "proxy.internal.example"})
        assert r.status_code == 200


def test_ui_sends_security_headers(open_proxy: ServerThread) -> None:
    for path in ("/ui", "/ui/static/app.js"):
        r = httpx.get(open_proxy.url + path)
        assert r.status_code == 200
        assert "default-src 'self'" in r.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
        assert r.headers["x-frame-options"] == "DENY"
        assert r.headers["x-content-type-options"] == "nosniff"


# ------------------------------------------------------- 8: upstream query string
def test_upstream_url_with_query_string(make_proxy: Callable[..., Proxy]) -> None:
    proxy = make_proxy()
    base = proxy.upstream.url
    proxy2 = make_proxy(upstream=base + "?api-version=2024-06-01&api-key=AZURE-SECRET-123")
    c = proxy2.client()
    r = c.chat.completions.create(model="fake-model",
                                  messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "echo: hi"
    assert proxy.upstream.paths[-1] == (
        "/v1/chat/completions?api-version=2024-06-01&api-key=AZURE-SECRET-123")
    assert [m.id for m in c.models.list()] == ["fake-model"]
    # an upstream failure's message never shows the query
    proxy.upstream.responder = lambda body: Reply(status=500, error="boom AZURE-SECRET-123")
    with pytest.raises(openai.InternalServerError) as err:
        c.chat.completions.create(model="fake-model",
                                  messages=[{"role": "user", "content": "again"}])
    assert "AZURE-SECRET-123" not in str(err.value)


def test_startup_line_masks_url_secrets(pg_url: str) -> None:
    # The store is opened before the line is printed (a store that cannot be opened is a
    # one-line error instead), so it is a real one: PostgreSQL with trust auth ignores
    # the password the URL carries.
    store = pg_url.replace("postgresql://postgres@", "postgresql://postgres:STORE-SECRET-456@")
    assert "STORE-SECRET-456" in store
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "copage.cli.main", "serve", "--upstream",
         "http://127.0.0.1:9/v1?api-version=2024-06-01&api-key=AZURE-SECRET-123", "--store",
         store, "--port", str(port)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline().decode()
    finally:
        proc.terminate()
        proc.wait(20)
    assert first.startswith("copage serve:"), first
    assert "AZURE-SECRET-123" not in first and "STORE-SECRET-456" not in first, first
    assert "postgresql://postgres:***@127.0.0.1" in first and "schema=" in first, first


# ------------------------------------------------------------ 9: NaN, Infinity
@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_numbers_are_400(proxy: Proxy, value: str) -> None:
    n = len(proxy.upstream.received)
    raw = '{"model":"m","temperature":TEMP,"messages":[{"role":"user","content":"hi"}]}'
    raw = raw.replace("TEMP", value)
    r = httpx.post(proxy.url + "/v1/chat/completions", content=raw,
                   headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
    assert value in r.json()["error"]["message"]
    assert len(proxy.upstream.received) == n


_HI = '{"role":"user","content":"hi"}'


@pytest.mark.parametrize("raw", [
    '{"model":"m","temperature":1e999,"messages":[' + _HI + ']}',
    '{"model":"m","temperature":-1E+400,"messages":[' + _HI + ']}',
    '{"model":"m","top_p":1.5e308000,"messages":[' + _HI + ']}',
    '{"model":"m","messages":[{"role":"user","content":"hi","weight":1e999}]}',
    '{"model":"m","messages":[' + _HI + '],"tools":[{"type":"function","function":'
    '{"name":"f","parameters":{"type":"object","properties":{"x":{"maximum":1e999}}}}}]}',
    '{"model":"m","messages":[' + _HI + '],"response_format":{"a":[1,{"b":-9e9999}]}}',
])
def test_numbers_out_of_float_range_are_400(proxy: Proxy, raw: str) -> None:
    """``1e999`` is valid JSON syntax, but Python reads it as infinity and would forward
    the bare token ``Infinity`` (invalid JSON): refused wherever it is in the body."""
    n = len(proxy.upstream.received)
    r = httpx.post(proxy.url + "/v1/chat/completions", content=raw,
                   headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid_json" and error["type"] == "invalid_request_error"
    assert "finite" in error["message"] and "e" in error["message"].lower()
    assert len(proxy.upstream.received) == n


def test_large_finite_numbers_pass_through(proxy: Proxy) -> None:
    raw = ('{"model":"m","temperature":1e-999,"seed":' + "9" * 30 + ',"messages":[' + _HI
           + '],"frequency_penalty":1.7976931348623157e308}')
    r = httpx.post(proxy.url + "/v1/chat/completions", content=raw,
                   headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 200, r.text
    sent = proxy.upstream.received[-1]
    assert sent["frequency_penalty"] == 1.7976931348623157e308 and sent["seed"] == int("9" * 30)


def test_out_of_range_number_after_a_known_prefix_is_400(proxy: Proxy) -> None:
    """A resent history's new messages are parsed alone (the prefix is known): the
    same check applies to them."""
    msgs: list[dict[str, Any]] = [{"role": "user", "content": "first"}]
    r = httpx.post(proxy.url + "/v1/chat/completions",
                   content=json.dumps({"model": "m", "messages": msgs}),
                   headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 200
    msgs.append(r.json()["choices"][0]["message"])
    raw = json.dumps({"model": "m", "messages": msgs})[:-2] + ',{"role":"user",' \
        '"content":"x","n":1e999}]}'
    r = httpx.post(proxy.url + "/v1/chat/completions", content=raw,
                   headers={**AUTH, "content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json", r.text


# -------------------------------------------- 10: keys, /metrics, app_from_env
def test_plaintext_proxy_keys_are_not_kept(proxy: Proxy) -> None:
    state = proxy.state
    assert KEY_A not in json.dumps(dict(state.settings.keys))
    assert all(k.startswith("sha256:") for k in state.settings.keys)
    assert KEY_A not in state.redact.secrets and UPSTREAM_KEY in state.redact.secrets
    assert not hasattr(state, "secrets")
    # keys are still recognised, and still redacted from what is logged
    assert proxy.client().models.list().data
    assert state.redact(f"saw {KEY_A} here") == "saw *** here"
    odd = ServeSettings(upstream="http://127.0.0.1:9/v1", keys={"plain-key-0001": "t"})
    assert "plain-key-0001" not in repr([getattr(odd, f) for f in odd.__slots__])


def test_keys_file_may_hold_digests(tmp_path: Path) -> None:
    from copage.server.settings import build_settings
    from copage.session.auth import KeyRing, digest

    f = tmp_path / "keys.json"
    f.write_text(json.dumps({digest("the-real-key-123"): "t1"}))
    s = build_settings({"upstream": "http://127.0.0.1:9/v1", "keys_file": str(f)}, env={})
    assert KeyRing(s.keys).tenant("Bearer the-real-key-123") == "t1"
    assert KeyRing(s.keys).tenant("Bearer " + digest("the-real-key-123")) is None


@pytest.mark.parametrize(("mode", "anonymous", "keyed"),
                         [("key", 401, 200), ("open", 200, 200), ("off", 404, 404)])
def test_metrics_access_is_an_option(make_proxy: Callable[..., Proxy], mode: str,
                                     anonymous: int, keyed: int) -> None:
    proxy = make_proxy(metrics=mode)
    assert httpx.get(proxy.url + "/metrics").status_code == anonymous
    r = httpx.get(proxy.url + "/metrics", headers=AUTH)
    assert r.status_code == keyed
    if keyed == 200:
        assert "copage_requests_total" in r.text


def test_app_from_env_reads_the_variable_its_docstring_names(
    monkeypatch: pytest.MonkeyPatch, upstream: FakeServer,
) -> None:
    doc = app_from_env.__doc__ or ""
    names = [w.strip("`,.()") for w in doc.split() if w.strip("`,.()").startswith("COPAGE_")]
    assert names, doc
    for name in names:
        monkeypatch.setenv(name, json.dumps({"upstream": upstream.url, "store": "memory://",
                                             "port": 9999}))
    monkeypatch.delenv("COPAGE_KEYS", raising=False)
    app = app_from_env()
    with ServerThread(app) as srv:
        assert app.state.proxy.settings.port == 9999
        assert httpx.post(srv.url + "/v1/chat/completions", json=HELLO).status_code == 200


# ------------------------------------------------ long conversations: no count cap
def test_no_default_message_cap(make_proxy: Callable[..., Proxy]) -> None:
    proxy = make_proxy()
    assert proxy.state.settings.max_messages == 0
    msgs = []
    for i in range(1100):
        msgs += [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]
    msgs.append({"role": "user", "content": "last"})
    r = _chat(proxy.url, {"model": "m", "messages": msgs}, timeout=120)
    assert r.status_code == 200, r.text[:300]
    capped = make_proxy(max_body_bytes=10_000)
    r = _chat(capped.url, {"model": "m", "messages": msgs})
    assert r.status_code == 413
