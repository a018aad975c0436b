"""Turns that must not fail, hang or leak: index failures, crossed locks, bad input, URLs."""

from __future__ import annotations

import asyncio
import json
import math
import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from proxy_helpers import KEY_A, KEYS, UPSTREAM_KEY
from starlette.testclient import TestClient

from copage.core.config import PagerConfig
from copage.llm.errors import RateLimited
from copage.llm.fake_server import FakeServer, Reply, echo
from copage.llm.model_types import ChatResponse, Usage
from copage.memory import PagedMemory
from copage.server import inspector
from copage.server.app import create_app
from copage.server.error_body import ProxyError, from_model_error
from copage.server.metrics import Metrics
from copage.server.request import parse_call
from copage.server.service import ProxyService
from copage.server.settings import ServeSettings
from copage.server.transcript import PostgresIndex, SQLiteIndex
from copage.session.overflow import KnownWindows
from copage.stores.inmemory import MemoryStore
from copage.stores.protocol import ConversationNotFound
from copage.stores.sqlite import SQLiteStore

PAGING = PagerConfig(boundary="fixed_2", resident_pages=1)
AUTH = {"authorization": f"Bearer {KEY_A}"}
JSON = {"content-type": "application/json"}
HELLO = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[Callable[..., TestClient]]:
    """``make(responder=echo, store="sqlite", **settings)``: an in-process proxy client."""
    stack: list[Any] = []

    def make(responder: Callable[[dict[str, Any]], Reply] = echo, store: str = "sqlite",
             **settings: Any) -> TestClient:
        up = FakeServer(responder).__enter__()
        stack.append(up)
        url = f"sqlite://{tmp_path / 'p.db'}" if store == "sqlite" else store
        settings.setdefault("upstream", up.url)
        s = ServeSettings(store=url, keys=KEYS, upstream_key=UPSTREAM_KEY, paging=PAGING,
                          **settings)
        c = TestClient(create_app(s), raise_server_exceptions=False).__enter__()
        stack.append(c)
        return c

    yield make
    for item in reversed(stack):
        item.__exit__(None, None, None)


def _turns(c: TestClient, cid: str) -> list[str]:
    store = c.app.state.proxy.store  # type: ignore[attr-defined]
    return [t.role for t in store.load(cid, tenant="alice").turns]


# ------------------------------------------------------------- 1: index after commit
def test_index_put_failure_after_commit_still_acknowledged(
    client: Callable[..., TestClient],
) -> None:
    c = client()
    state = c.app.state.proxy  # type: ignore[attr-defined]

    def broken_put(*args: Any) -> None:
        raise sqlite3.OperationalError("database is locked")

    state.index.put = broken_put
    r = c.post("/v1/chat/completions", json=HELLO,
               headers={**AUTH, "X-Copage-Conversation": "conv1"})
    assert r.status_code == 200, r.text
    assert _turns(c, "conv1") == ["user", "assistant"]
    # The lock was released: the next turn goes through.
    del state.index.put
    r = c.post("/v1/chat/completions", headers={**AUTH, "X-Copage-Conversation": "conv1"},
               json={"model": "m", "messages": [{"role": "user", "content": "again"}]})
    assert r.status_code == 200
    assert _turns(c, "conv1") == ["user", "assistant"] * 2


def test_index_lookup_failure_is_503(client: Callable[..., TestClient]) -> None:
    c = client()
    state = c.app.state.proxy  # type: ignore[attr-defined]

    def broken_find(*args: Any) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    state.index.find = broken_find
    r = c.post("/v1/chat/completions", json=HELLO, headers=AUTH)
    assert r.status_code == 503
    assert r.json()["error"]["code"] == "index_error"


def test_postgres_index_reconnects_after_broken_connection(pg_url: str) -> None:
    import psycopg

    dsn, _, schema = pg_url.partition("?schema=")
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        index = PostgresIndex(dsn, schema)
        try:
            index.put("t", "c1", "h1")
            pid = index._conn.info.backend_pid
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
            # the break is not seen: the lookup runs again on a new connection (before:
            # it failed once, issue 32)
            assert index.find("t", ["", "h1"]) == ("c1", 1)
            assert index._conn.info.backend_pid != pid
            index.put("t", "c1", "h2")
            assert index.find("t", ["", "h2"]) == ("c1", 1)
        finally:
            index.close()


# ---------------------------------------------------------------- 2: crossed locks
class _GatedUpstream:
    """Answers each message once its gate is set."""

    def __init__(self) -> None:
        self.gates: dict[str, asyncio.Event] = {}
        self.windows = KnownWindows()

    def model_for(self, name: str | None, key: str | None = None) -> Any:
        class M:
            name = spec = "m"

        return M()

    async def complete(self, model: Any, request: Any) -> tuple[ChatResponse, float]:
        await self.gates[request.messages[-1]["content"]].wait()
        return ChatResponse(text="ok", tool_calls=(), finish_reason="stop",
                            usage=Usage(1, 1), model="m"), 0.0


def _call(text: str) -> Any:
    return parse_call({"model": "m", "messages": [{"role": "user", "content": text}]},
                      max_messages=10, max_tools=10)


def _worker(path: Path, up: Any, **kw: Any) -> ProxyService:
    return ProxyService(store=SQLiteStore(path), index=SQLiteIndex(path), upstream=up,
                        paging=PagerConfig(), metrics=Metrics(),
                        executor=ThreadPoolExecutor(1), cache_size=0, **kw)


def test_two_workers_crossed_locks_do_not_deadlock(tmp_path: Path) -> None:
    """Two workers with 1-thread pools: A holds X, B holds Y, B waits for X, A for Y."""

    async def main() -> int:
        up = _GatedUpstream()
        up.gates = {k: asyncio.Event() for k in ("x1", "y1", "x2", "y2")}
        a, b = _worker(tmp_path / "s.db", up), _worker(tmp_path / "s.db", up)
        tasks = []
        for svc, text, cid in ((a, "x1", "X"), (b, "y1", "Y"), (b, "x2", "X"), (a, "y2", "Y")):
            tasks.append(asyncio.create_task(svc.chat("t", _call(text), cid)))
            await asyncio.sleep(0.2)
        for g in up.gates.values():
            g.set()
        done, pending = await asyncio.wait(tasks, timeout=10)
        for t in pending:
            t.cancel()
        for svc in (a, b):
            svc.executor.shutdown(wait=False, cancel_futures=True)
        return sum(1 for t in done if t.exception() is None)

    assert asyncio.run(main()) == 4


def test_lock_held_too_long_is_409_conversation_busy(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with store.lock("X", tenant="t"):
            held.set()
            release.wait(10)

    th = threading.Thread(target=holder)
    th.start()
    held.wait(5)
    try:
        svc = _worker(tmp_path / "s.db", _GatedUpstream(), lock_timeout=0.2)
        with pytest.raises(ProxyError) as err:
            asyncio.run(svc.chat("t", _call("x"), "X"))
        assert err.value.status == 409
        assert err.value.code == "conversation_busy"
    finally:
        release.set()
        th.join()


# ---------------------------------------------------------------- 3: upstream URLs
def test_upstream_url_credentials_never_shown(client: Callable[..., TestClient]) -> None:
    url = "https://user:tok123456@127.0.0.1:1/v1?key=qsecret"
    c = client(upstream=url)
    r = c.post("/v1/chat/completions", json=HELLO, headers=AUTH)
    assert r.status_code == 502
    for secret in ("user:tok123456", "tok123456", "qsecret"):
        assert secret not in r.text
    secrets = ServeSettings(upstream=url, store="memory://").secrets()
    assert "tok123456" in secrets and "user:tok123456" in secrets


# ------------------------------------------------------ 4: validate before creating
@pytest.mark.parametrize("store", ["sqlite", "memory://"])
def test_rejected_first_request_creates_no_conversation(
    client: Callable[..., TestClient], store: str,
) -> None:
    c = client(store=store)
    for _ in range(3):
        r = c.post("/v1/chat/completions", headers=AUTH, json={
            "model": "m", "messages": [{"role": "assistant", "content": "x"}]})
        assert r.status_code == 400
    st = c.app.state.proxy.store  # type: ignore[attr-defined]
    assert st.list_conversations(tenant="alice") == []
    if isinstance(st, MemoryStore):
        assert st._locks == {}


# ------------------------------------------------------------------ 5: bad input
def test_deeply_nested_json_is_400(client: Callable[..., TestClient]) -> None:
    c = client()
    body = b'{"model":"m","messages":' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    r = c.post("/v1/chat/completions", content=body, headers={**AUTH, **JSON})
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_json"


def test_lone_surrogate_in_request_is_400(client: Callable[..., TestClient]) -> None:
    c = client()
    raw = b'{"model":"m","messages":[{"role":"user","content":"hi \\ud800 there"}]}'
    r = c.post("/v1/chat/completions", content=raw, headers={**AUTH, **JSON})
    assert r.status_code == 400
    assert "surrogate" in r.json()["error"]["message"]
    assert c.app.state.proxy.store.list_conversations(tenant="alice") == []  # type: ignore[attr-defined]


def test_lone_surrogate_in_upstream_reply_is_502(client: Callable[..., TestClient]) -> None:
    c = client(lambda body: Reply(text="bad \ud800 reply"))
    r = c.post("/v1/chat/completions", json=HELLO,
               headers={**AUTH, "X-Copage-Conversation": "c1"})
    assert r.status_code == 502
    assert c.app.state.proxy.store.list_conversations(tenant="alice") == []  # type: ignore[attr-defined]


def test_recall_of_a_huge_page_number_is_a_tool_error(client: Callable[..., TestClient]) -> None:
    def responder(body: dict[str, Any]) -> Reply:
        if not any(m.get("role") == "tool" for m in body["messages"]):
            return Reply(tool_calls=[("recall", {"page": "p" + "9" * 5000})])
        return Reply(text="tool said: " + body["messages"][-1]["content"][:40])

    c = client(responder)
    r = c.post("/v1/chat/completions", json=HELLO, headers=AUTH)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("wait", [math.inf, math.nan, 1e300, -5.0])
def test_rate_limit_with_absurd_retry_after_maps_cleanly(wait: float) -> None:
    err = from_model_error(RateLimited("upstream", "slow down", status=429, retry_after=wait))
    assert err.status == 429
    value = err.headers.get("retry-after")
    assert value is None or 0 <= int(value) <= 86400


# ------------------------------------------------------------ 7 and 8: inspector
def test_inspector_never_recreates_a_deleted_conversation() -> None:
    store = MemoryStore()
    PagedMemory(store=store, conversation_id="c1", tenant="t").add("user", "hi")
    events = store.events("c1", tenant="t")
    store.delete_conversation("c1", tenant="t")
    store.events = lambda *a, **k: events  # type: ignore[method-assign]  # deleted meanwhile
    with pytest.raises(ConversationNotFound):
        inspector.conversation(store, "t", "c1")
    assert not store.exists("c1", tenant="t")


def test_inspector_list_hides_old_empty_conversations() -> None:
    store = MemoryStore()
    PagedMemory(store=store, conversation_id="empty", tenant="t", clock=lambda: 1000.0)
    PagedMemory(store=store, conversation_id="full", tenant="t",
                clock=lambda: 1000.0).add("user", "hi")
    ids = [r["id"] for r in inspector.conversations(store, "t", now=1000.0 + 60)]
    assert sorted(ids) == ["empty", "full"]  # a first turn may still be running
    ids = [r["id"] for r in inspector.conversations(store, "t", now=1000.0 + 3600)]
    assert ids == ["full"]
    assert json.dumps(inspector.conversations(store, "t"))  # no clock: everything
