"""``--upstream-key client`` and tenants' own upstream keys: the right key reaches each
upstream API, each client key is its own tenant, keys never show in logs, /metrics or
the inspector, and a keyless non-loopback upstream is warned about at start."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import httpx
import openai
import pytest
from formats import Client
from proxy_helpers import KEY_A, KEY_B, KEYS, UPSTREAM_KEY, Proxy

from copage.llm.fake_server import FakeReply
from copage.server.app import create_app
from copage.server.callers import client_tenant
from copage.server.server_thread import ServerThread
from copage.server.settings import ServeSettings, build_settings

DISTINCT = "cliENTkeyDISTINCTIVE7c1f9e2b4a6d8"  # no sk- prefix: not redacted by shape
ALICE_OWN = "sk-alice-own-upstream-key-4e5f6a7b"


def _client_proxy(make_proxy: Callable[..., Proxy], **kw: object) -> Proxy:
    return make_proxy(upstream_key="client", keys={}, **kw)


@pytest.mark.parametrize("api", ["chat", "responses", "messages"])
def test_client_key_reaches_each_upstream_api(make_proxy: Callable[..., Proxy], api: str) -> None:
    """Proxy A passes each client's key on; its upstream, proxy B with keys alice and
    bob, files each turn under the tenant of the key A was given: the client's. The
    openai SDK (Authorization) and the anthropic SDK (x-api-key) as clients."""
    b = make_proxy()
    a = _client_proxy(make_proxy, upstream=b.url + "/v1", upstream_api=api)
    Client(a, "chat", key=KEY_A).say("alice via the openai SDK")
    Client(a, "messages", key=KEY_B).say("bob via the anthropic SDK")
    Client(a, "responses", key=KEY_A, stream=True).say("alice streamed")
    b_store = b.state.store
    alice = [b_store.load(c.id, tenant="alice") for c in b_store.list_conversations(tenant="alice")]
    bob = [b_store.load(c.id, tenant="bob") for c in b_store.list_conversations(tenant="bob")]
    texts = lambda convs: " ".join(t.text for c in convs for t in c.turns)
    assert "alice via the openai SDK" in texts(alice) and "alice streamed" in texts(alice)
    assert "bob via the anthropic SDK" in texts(bob) and "alice" not in texts(bob)
    # on A each client key is its own tenant; nothing in the shared 'default'
    a_store = a.state.store
    assert a_store.list_conversations(tenant="default") == []
    assert len(a_store.list_conversations(tenant=client_tenant(KEY_A))) == 2
    assert len(a_store.list_conversations(tenant=client_tenant(KEY_B))) == 1
    # a key B does not know is refused by B, and A says so (without the key)
    with pytest.raises(openai.AuthenticationError) as err:
        a.client(DISTINCT).chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "hi"}])
    assert DISTINCT not in str(err.value)


def test_without_a_key_the_client_is_refused(make_proxy: Callable[..., Proxy]) -> None:
    a = _client_proxy(make_proxy)
    r = httpx.post(f"{a.url}/v1/chat/completions",
                   json={"model": "m", "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 401 and "your own upstream key" in r.text
    r = httpx.post(f"{a.url}/v1/messages", headers={"anthropic-version": "2023-06-01"},
                   json={"model": "m", "max_tokens": 9,
                         "messages": [{"role": "user", "content": "x"}]})
    assert r.status_code == 401 and r.json()["type"] == "error"
    assert a.upstream.requests == []


def test_client_keys_never_leak(make_proxy: Callable[..., Proxy],
                                caplog: pytest.LogCaptureFixture) -> None:
    """A distinctive key, used for good turns and for one the upstream refuses while
    echoing the key back (as OpenAI's 401 does): the upstream got it, and it is not in
    the logs, the error the client gets, /metrics or the inspector's API."""
    caplog.set_level(logging.DEBUG)
    a = _client_proxy(make_proxy, metrics="open")
    up = a.upstream
    client = a.client(DISTINCT, default_headers={"X-Copage-Conversation": "leak-check"})
    for i in range(6):
        client.chat.completions.create(model="m", messages=[
            {"role": "user", "content": f"turn {i}"}], stream=i % 2 == 1)
    assert {h["authorization"] for h in up.headers} == {f"Bearer {DISTINCT}"}
    assert not any(UPSTREAM_KEY in json.dumps(h) for h in up.headers)
    up.add(FakeReply({"error": {"message": f"Incorrect API key provided: {DISTINCT}.",
                                "type": "invalid_request_error"}}, status=401))
    with pytest.raises(openai.AuthenticationError) as err:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    up.add(FakeReply({"error": {"message": f"key {DISTINCT} is over quota"}}, status=500))
    with pytest.raises(openai.InternalServerError) as err2:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "y"}])
    # anything else that would write the key (an SDK's debug line, a traceback) is
    # redacted by the digest the proxy learnt from the request, not by the key's shape
    logging.getLogger("copage.server").warning("something mentioned %s", DISTINCT)
    assert "something mentioned ***" in caplog.text
    auth = {"authorization": f"Bearer {DISTINCT}"}
    seen = [str(err.value), str(err2.value), caplog.text,
            httpx.get(f"{a.url}/metrics").text,
            httpx.get(f"{a.url}/ui/api/conversations", headers=auth).text,
            httpx.get(f"{a.url}/ui/api/conversations/leak-check", headers=auth).text]
    assert "turn 5" in seen[-1]  # the inspector shows the conversation ...
    assert "upstream failure" in caplog.text  # ... and the failures were logged
    for text in seen:
        assert DISTINCT not in text and DISTINCT[10:] not in text


def test_a_tenants_own_upstream_key(make_proxy: Callable[..., Proxy], tmp_path: Path,
                                    caplog: pytest.LogCaptureFixture) -> None:
    """A keys-file entry may carry the tenant's upstream key: alice's turns reach the
    upstream with it, bob's with the proxy's; neither is logged."""
    keys = tmp_path / "keys.toml"
    keys.write_text(f'[keys]\n"{KEY_A}" = {{ tenant = "alice", upstream_key = "{ALICE_OWN}" }}\n'
                    f'"{KEY_B}" = "bob"\n')
    settings = build_settings({"upstream": "http://127.0.0.1:1/v1", "keys_file": str(keys)},
                              env={"COPAGE_UPSTREAM_KEY": UPSTREAM_KEY})
    assert settings.tenant_keys == {"alice": ALICE_OWN} and ALICE_OWN not in repr(settings)
    caplog.set_level(logging.DEBUG)
    p = make_proxy(keys={KEY_A: "alice", KEY_B: "bob"}, tenant_keys=settings.tenant_keys)
    Client(p, "chat", key=KEY_A).say("from alice")
    Client(p, "messages", key=KEY_B).say("from bob")
    Client(p, "responses", key=KEY_A).say("alice again")
    assert [h["authorization"] for h in p.upstream.headers] == [
        f"Bearer {ALICE_OWN}", f"Bearer {UPSTREAM_KEY}", f"Bearer {ALICE_OWN}"]
    models = httpx.get(f"{p.url}/v1/models", headers={"authorization": f"Bearer {KEY_A}"})
    assert models.status_code == 200
    assert p.upstream.headers[-1]["authorization"] == f"Bearer {ALICE_OWN}"
    assert ALICE_OWN not in caplog.text and UPSTREAM_KEY not in caplog.text


def test_settings_refuse_what_cannot_work() -> None:
    with pytest.raises(ValueError, match="takes no proxy keys"):
        ServeSettings(upstream="http://127.0.0.1:1/v1", upstream_key="client", keys=KEYS)
    with pytest.raises(ValueError, match="needs --upstream URL"):
        ServeSettings(model="openai:gpt-4o-mini", upstream_key="client")
    with pytest.raises(ValueError, match="tenant 'carol', which no proxy key names"):
        ServeSettings(upstream="http://127.0.0.1:1/v1", keys=KEYS, tenant_keys={"carol": "k"})
    client = ServeSettings(upstream="http://127.0.0.1:1/v1", upstream_key="client")
    assert client.client_key and "client" not in client.secrets()


@pytest.mark.parametrize(("upstream", "kw", "warned"), [
    ("http://192.0.2.10:8080/v1", {}, True),
    ("https://api.example.com/v1", {"keys": KEYS, "tenant_keys": {"alice": "k-alice-1"}}, True),
    ("https://api.example.com/v1", {"upstream_key": "sk-own-key-123"}, False),
    ("https://api.example.com/v1", {"upstream_key": "client"}, False),
    ("http://127.0.0.1:8080/v1", {}, False),
    ("http://localhost:8080/v1", {}, False),
    ("http://[::1]:8080/v1", {}, False),
])
def test_keyless_remote_upstream_is_warned_at_start(
        upstream: str, kw: dict[str, object], warned: bool,
        caplog: pytest.LogCaptureFixture) -> None:
    settings = ServeSettings(upstream=upstream, store="memory://", **kw)  # type: ignore[arg-type]
    caplog.set_level(logging.WARNING, logger="copage.server")
    with ServerThread(create_app(settings)):
        pass
    found = [r.getMessage() for r in caplog.records if "no upstream key" in r.getMessage()]
    assert bool(found) == warned
    if kw.get("tenant_keys"):
        assert "tenant(s) bob" in found[0] and "alice" not in found[0]


def test_copage_serve_process_with_client_keys(tmp_path: Path) -> None:
    """The real command: ``copage serve --upstream-key client`` passes the openai SDK's
    key on and says so at start; a keyless remote upstream is warned about."""
    from proxy_helpers import free_port, spawn_worker

    from copage.llm.fake_server import FakeServer

    log = tmp_path / "serve.log"
    with FakeServer() as up, log.open("wb") as err:
        port = free_port()
        proc = spawn_worker(port, up.url, f"sqlite://{tmp_path / 'p.db'}", "--upstream-key",
                            "client", env={"COPAGE_KEYS": ""}, log_level="debug", stderr=err)
        try:
            reply = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=DISTINCT,
                                  max_retries=0).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hello"}])
            assert reply.choices[0].message.content == "echo: hello"
            assert up.headers[-1]["authorization"] == f"Bearer {DISTINCT}"
        finally:
            proc.terminate()
            proc.wait(10)
        port = free_port()
        proc = spawn_worker(port, "http://192.0.2.10:8080/v1", f"sqlite://{tmp_path / 'q.db'}",
                            env={"COPAGE_KEYS": "", "COPAGE_UPSTREAM_KEY": ""}, stderr=err)
        proc.terminate()
        proc.wait(10)
    text = log.read_text()
    assert "--upstream-key client: each client's own key goes to the upstream" in text
    assert DISTINCT not in text and UPSTREAM_KEY not in text
    assert "WARNING copage.server: the upstream http://192.0.2.10:8080/v1 is not on this " \
        "machine and no upstream key is set for tenant(s) default" in text
