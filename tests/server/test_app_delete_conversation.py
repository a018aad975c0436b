"""Deleting a conversation: the API endpoint under the caller's key and tenant, the
``copage conversations`` command; gone from the store and every worker's caches."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
import openai
import pytest
from proxy_helpers import KEY_A, KEY_B, Proxy

from copage.cli.main import main


def _say(proxy: Proxy, cid: str, text: str, key: str = KEY_A) -> None:
    proxy.client(key, default_headers={"X-Copage-Conversation": cid}).chat.completions.create(
        model="m", messages=[{"role": "user", "content": text}])


def test_delete_endpoint_and_tenants(proxy: Proxy) -> None:
    for t in ("alice secret 7319", "two", "three"):
        _say(proxy, "doomed", t)
    _say(proxy, "doomed", "bob's own", key=KEY_B)
    store = proxy.state.store
    # bob deletes "doomed": his own conversation of that name, never alice's
    bob = httpx.delete(proxy.url + "/v1/conversations/doomed",
                       headers={"authorization": f"Bearer {KEY_B}"})
    assert bob.status_code == 200 and store.exists("doomed", tenant="alice")
    assert not store.exists("doomed", tenant="bob")
    again = httpx.delete(proxy.url + "/v1/conversations/doomed",
                         headers={"authorization": f"Bearer {KEY_B}"})
    assert again.status_code == 404 and again.json()["error"]["code"] == "conversation_not_found"
    assert httpx.delete(proxy.url + "/v1/conversations/doomed").status_code == 401
    assert proxy.state.service.cache.holds("alice", "doomed")
    # alice deletes hers with the openai SDK's conversations.delete
    deleted = proxy.client().conversations.delete("doomed")
    assert deleted.deleted is True and deleted.id == "doomed"
    assert not store.exists("doomed", tenant="alice")
    assert not proxy.state.service.cache.holds("alice", "doomed")
    assert proxy.state.service.recent.get("alice", "doomed") is None
    ui = httpx.get(proxy.url + "/ui/api/conversations/doomed",
                   headers={"authorization": f"Bearer {KEY_A}"})
    assert ui.status_code == 404
    # the name starts afresh: nothing of the old conversation reaches the upstream
    _say(proxy, "doomed", "new start")
    assert "7319" not in json.dumps(proxy.upstream.received[-1])


def test_deleted_in_one_worker_is_gone_from_another(make_proxy: Callable[..., Proxy]) -> None:
    a, b = make_proxy(store="sqlite"), make_proxy(store="sqlite")  # one SQLite file
    for t in ("alice secret 7319", "two", "three"):
        _say(b, "shared", t)
    assert b.state.service.cache.holds("alice", "shared")
    assert a.client().conversations.delete("shared").deleted is True
    _say(b, "shared", "after the delete")
    assert "7319" not in json.dumps(b.upstream.received[-1])
    from copage.memory import PagedMemory

    mem = PagedMemory(store=b.state.store, conversation_id="shared", tenant="alice",
                      create=False)
    assert [t.text for t in mem.turns] == ["after the delete", "echo: after the delete"]


def test_transparent_client_after_delete_starts_a_new_conversation(proxy: Proxy) -> None:
    c = proxy.client()
    hist = [{"role": "user", "content": "first 7319"}]
    raw = c.chat.completions.with_raw_response.create(model="m", messages=hist)
    cid = raw.headers["x-copage-conversation"]
    hist += [{"role": "assistant", "content": "echo: first 7319"},
             {"role": "user", "content": "second"}]
    c.conversations.delete(cid)
    raw = c.chat.completions.with_raw_response.create(model="m", messages=hist)
    assert raw.headers["x-copage-conversation"] != cid
    assert not proxy.state.store.exists(cid, tenant="alice")
    with pytest.raises(openai.NotFoundError):
        c.conversations.delete(cid)


def test_cli_lists_and_deletes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from copage.memory import PagedMemory
    from copage.stores import open_store

    url = f"sqlite://{tmp_path / 'c.db'}"
    store = open_store(url)
    for cid, tenant in (("one", "alice"), ("two", "alice"), ("one", "bob")):
        PagedMemory(store=store, conversation_id=cid, tenant=tenant).add("user", "hi")
    store.close()
    assert main(["conversations", "list", "--store", url, "--tenant", "alice"]) == 0
    assert sorted(line.split("\t")[0] for line in capsys.readouterr().out.splitlines()) == [
        "one", "two"]
    assert main(["conversations", "delete", "one", "--store", url, "--tenant", "alice"]) == 0
    assert main(["conversations", "delete", "one", "--store", url, "--tenant", "alice"]) == 1
    assert "no conversation 'one'" in capsys.readouterr().err
    store = open_store(url)
    assert not store.exists("one", tenant="alice") and store.exists("one", tenant="bob")
    assert store.exists("two", tenant="alice")
    store.close()
    assert main(["conversations", "delete", "--store", url]) == 2


def test_recreated_id_is_not_served_from_another_workers_cache(
        make_proxy: Callable[..., Proxy]) -> None:
    """Deleted in worker A, then re-created there under the same id up to the version
    worker B's cached copy has: B must not take its copy for the new conversation."""
    a, b = make_proxy(store="sqlite"), make_proxy(store="sqlite")
    for t in ("old secret 7319", "two"):
        _say(b, "x", t)
    cached = b.state.store.version("x", tenant="alice")
    assert a.client().conversations.delete("x").deleted is True
    _say(a, "x", "new one")
    while a.state.store.version("x", tenant="alice") < cached:
        _say(a, "x", "more")
    assert a.state.store.version("x", tenant="alice") == cached
    _say(b, "x", "on b")
    assert "7319" not in json.dumps(b.upstream.received[-1]), "the deleted turns came back"
