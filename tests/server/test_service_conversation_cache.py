"""The per-worker conversation cache: reused, reloaded after other writers, never left dirty."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from proxy_helpers import stats

from copage.llm.fake_server import Reply
from copage.memory import PagedMemory
from copage.session.memcache import MemoryCache
from copage.stores import open_store


def _send(c: openai.OpenAI, text: str) -> Any:
    return c.chat.completions.with_raw_response.create(
        model="m", messages=[{"role": "user", "content": text}])


def _user_texts(proxy: Any, cid: str) -> list[str]:
    return [t.text for t in proxy.state.store.load(cid, tenant="alice").turns if t.role == "user"]


def test_turns_reuse_the_cached_conversation(make_proxy: Any) -> None:
    proxy = make_proxy(store="sqlite")
    c = proxy.client(default_headers={"X-Copage-Conversation": "conv-c"})
    for i in range(6):
        _send(c, f"message {i}")
    cache = proxy.state.service.cache
    assert (cache.hits, cache.reloads, len(cache)) == (5, 0, 1)
    assert proxy.state.service.inline  # SQLite + cached: no thread hop
    mem = cache._items[("alice", "conv-c")]
    assert mem.version == proxy.state.store.version("conv-c", tenant="alice")


def test_cached_conversation_reloaded_after_another_worker_wrote(make_proxy: Any) -> None:
    a, b = make_proxy(store="sqlite"), make_proxy(store="sqlite")  # one file, two apps
    ca = a.client(default_headers={"X-Copage-Conversation": "shared"})
    cb = b.client(default_headers={"X-Copage-Conversation": "shared"})
    _send(ca, "one at A")
    _send(ca, "two at A")
    _send(cb, "three at B")  # A's cached copy is now one commit behind
    r = _send(ca, "four at A RECALL p1")
    cache = a.state.service.cache
    assert cache.reloads == 1
    assert _user_texts(a, "shared") == ["one at A", "two at A", "three at B",
                                        "four at A RECALL p1"]
    # A's upstream request held B's turn: the reloaded pager, not the stale one, was used.
    sent = json.dumps(a.upstream.received[-1]["messages"]) + json.dumps(
        a.upstream.received[-2]["messages"])
    assert "three at B" in sent
    assert stats(r.headers)["pages"] >= 1
    mem = cache._items[("alice", "shared")]
    fresh = PagedMemory(store=a.state.store, conversation_id="shared", tenant="alice")
    assert [t.text for t in mem.turns] == [t.text for t in fresh.turns]
    assert mem.resident == fresh.resident and mem.version == fresh.version


def test_failed_upstream_turn_leaves_cache_and_store_unchanged(make_proxy: Any) -> None:
    proxy = make_proxy(store="sqlite")
    c = proxy.client(default_headers={"X-Copage-Conversation": "conv-f"})
    for t in ("one", "two", "three"):
        _send(c, t)
    store, cache = proxy.state.store, proxy.state.service.cache
    before = store.load("conv-f", tenant="alice")
    calls = {"n": 0}

    def recall_then_fail(body: dict[str, Any]) -> Reply:
        calls["n"] += 1
        return Reply(tool_calls=[("recall", {"page": "p1"})]) if calls["n"] == 1 else Reply(
            status=503, error="down")

    proxy.upstream.responder = recall_then_fail
    with pytest.raises(openai.InternalServerError):
        c.chat.completions.create(model="m", messages=[{"role": "user", "content": "lost"}])
    after = store.load("conv-f", tenant="alice")
    assert (after.version, after.state, after.turns) == (before.version, before.state,
                                                         before.turns)
    assert not cache.holds("alice", "conv-f"), "a failed turn drops its cached object"
    proxy.upstream.responder = lambda body: Reply(text="fine")
    r = _send(c, "four")
    assert r.parse().choices[0].message.content == "fine"
    assert _user_texts(proxy, "conv-f") == ["one", "two", "three", "four"]
    mem = cache._items[("alice", "conv-f")]
    assert "lost" not in [t.text for t in mem.turns]
    assert mem.version == before.version + 1


def test_cache_is_bounded_lru(tmp_path: Any) -> None:
    store = open_store(f"sqlite://{tmp_path / 'c.db'}")
    cache = MemoryCache(store, size=2)
    mems = [PagedMemory(store=store, conversation_id=f"c{i}") for i in range(3)]
    for m in mems:
        m.add("user", "hello")
        cache.put(m)
    assert len(cache) == 2 and not cache.holds("default", "c0")
    assert cache.take("default", "c2") is mems[2] and not cache.holds("default", "c2")
    store.delete_conversation("c1")
    assert cache.take("default", "c1") is None  # gone from the store: not served stale
    store.close()


def test_cache_off_for_stores_without_version() -> None:
    class NoVersion:
        pass

    assert MemoryCache(NoVersion(), size=10).size == 0  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cache size"):
        MemoryCache(open_store("memory://"), size=-1)
