"""Real ``copage serve`` processes: two workers on one PostgreSQL, and kill -9 mid-request."""

from __future__ import annotations

import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from proxy_helpers import KEY_A, free_port, spawn_worker

from copage.llm.fake_server import FakeServer, Reply, echo
from copage.memory import PagedMemory
from copage.stores import open_store

PAGING = ("--boundary", "fixed_4", "-k", "2")


def _send(port: int, cid: str, text: str) -> httpx.Response:
    return httpx.post(
        f"http://127.0.0.1:{port}/v1/chat/completions", timeout=60,
        headers={"authorization": f"Bearer {KEY_A}", "X-Copage-Conversation": cid},
        json={"model": "m", "messages": [{"role": "user", "content": text}]},
    )


def _check_consistent(store_url: str, cid: str, expect_users: list[str]) -> None:
    store = open_store(store_url)
    try:
        mem = PagedMemory(store=store, conversation_id=cid, tenant="alice")
        turns = mem.turns
        users = [t.text for t in turns if t.role == "user"]
        assert sorted(users) == sorted(expect_users), "every acknowledged turn stored once"
        assert [t.role for t in turns] == ["user", "assistant"] * len(expect_users)
        for u, a in zip(turns[::2], turns[1::2], strict=True):
            assert a.text == f"echo: {u.text}", "each answer follows its own question"
        conv = store.load(cid, tenant="alice")
        ranges = [(p.first_seq, p.last_seq) for p in sorted(conv.pages, key=lambda p: p.index)]
        flat = [s for a, b in ranges for s in range(a, b + 1)]
        assert flat == list(range(len(flat))), "pages tile the turns, none duplicated"
        assert len(mem.resident) <= 2 and set(mem.resident) | set(mem.evicted) == {
            p.id for p in mem.pages}
        assert not set(mem.resident) & set(mem.evicted)
    finally:
        store.close()


@pytest.mark.postgres
@pytest.mark.slow
def test_two_workers_on_one_postgres(pg_url: str) -> None:
    with FakeServer(lambda body: Reply(text=echo(body).text, delay=0.01)) as up:
        ports = [free_port(), free_port()]
        procs = [spawn_worker(p, up.url, pg_url, *PAGING) for p in ports]
        try:
            texts = [f"message {i}" for i in range(24)]
            with ThreadPoolExecutor(8) as ex:
                results = list(ex.map(lambda it: _send(ports[it[0] % 2], "shared", it[1]),
                                      enumerate(texts)))
            assert [r.status_code for r in results] == [200] * len(texts)
            assert {r.headers["x-copage-conversation"] for r in results} == {"shared"}
            # transparent mode across workers: a history started on one continues on the other
            hist: list[dict[str, Any]] = []
            ids = set()
            for i in range(4):
                hist.append({"role": "user", "content": f"t{i}"})
                r = httpx.post(f"http://127.0.0.1:{ports[i % 2]}/v1/chat/completions",
                               headers={"authorization": f"Bearer {KEY_A}"},
                               json={"model": "m", "messages": hist}, timeout=30)
                ids.add(r.headers["x-copage-conversation"])
                hist.append(r.json()["choices"][0]["message"])
            assert len(ids) == 1
        finally:
            for p in procs:
                p.terminate()
                p.wait(10)
    _check_consistent(pg_url, "shared", texts)


@pytest.mark.slow
def test_kill_9_mid_request_loses_no_acknowledged_turn(tmp_path: Path) -> None:
    store = f"sqlite://{tmp_path / 'kill.db'}"
    slow = threading.Event()

    def responder(body: dict[str, Any]) -> Reply:
        return Reply(text=echo(body).text, delay=30.0 if slow.is_set() else 0.0)

    with FakeServer(responder) as up:
        port = free_port()
        proc = spawn_worker(port, up.url, store, *PAGING)
        acked = []
        try:
            for i in range(6):
                assert _send(port, "k", f"before {i}").status_code == 200
                acked.append(f"before {i}")
            slow.set()
            n = len(up.received)
            pending = ThreadPoolExecutor(1).submit(_send, port, "k", "lost in flight")
            while len(up.received) == n:  # the worker is now waiting on the upstream
                threading.Event().wait(0.02)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            with pytest.raises(httpx.HTTPError):
                pending.result(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
        slow.clear()
        _check_consistent(store, "k", acked)
        proc = spawn_worker(port, up.url, store, *PAGING)
        try:
            assert _send(port, "k", "after restart").status_code == 200
        finally:
            proc.terminate()
            proc.wait(10)
    _check_consistent(store, "k", [*acked, "after restart"])


def _race(ports: list[int], n: int, body: dict[str, Any], headers: dict[str, str]
          ) -> list[httpx.Response]:
    """``n`` identical requests sent at once, alternating between the workers."""
    start = threading.Barrier(n)

    def send(i: int) -> httpx.Response:
        start.wait()
        return httpx.post(f"http://127.0.0.1:{ports[i % 2]}/v1/chat/completions", json=body,
                          headers={"authorization": f"Bearer {KEY_A}", **headers}, timeout=60)

    with ThreadPoolExecutor(n) as ex:
        return list(ex.map(send, range(n)))


@pytest.mark.postgres
@pytest.mark.slow
def test_identical_racing_requests_at_two_workers_are_stored_once(pg_url: str) -> None:
    """A retry is told from its original by the original's commit, not its arrival: an
    identical request that arrived a moment before the one that took the lock first
    (at the other worker) is still its retry, answered from the store."""
    with FakeServer(lambda body: Reply(text=echo(body).text, delay=0.3)) as up:
        ports = [free_port(), free_port()]
        procs = [spawn_worker(p, up.url, pg_url, *PAGING) for p in ports]
        try:
            for round_ in range(6):
                cid = f"race-{round_}"
                body = {"model": "m", "messages": [{"role": "user", "content": f"q{round_}"}]}
                results = _race(ports, 6, body, {"X-Copage-Conversation": cid})
                assert [r.status_code for r in results] == [200] * 6
                assert {r.json()["choices"][0]["message"]["content"] for r in results} == {
                    f"echo: q{round_}"}
                _check_consistent(pg_url, cid, [f"q{round_}"])
            assert len(up.received) == 6, "one upstream call per question"
            # transparent mode: racing identical first turns at two workers join the one
            # that runs (its pending lock is PostgreSQL's), one conversation
            body = {"model": "m", "messages": [{"role": "user", "content": "same first turn"}]}
            results = _race(ports, 6, body, {})
            assert [r.status_code for r in results] == [200] * 6
            assert len({r.headers["x-copage-conversation"] for r in results}) == 1
            assert len(up.received) == 7
        finally:
            for p in procs:
                p.terminate()
                p.wait(10)
