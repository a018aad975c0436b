"""A retry that arrives while the first attempt is still running joins it.

The official ``openai`` SDK times out and retries by itself; a first turn in
transparent mode has no conversation id yet, so the retry must find the attempt
still in flight (not only committed turns): one upstream call, one conversation.
Run against a real ``copage serve`` process at its defaults (no keys, the default
SQLite store under ``XDG_DATA_HOME``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from proxy_helpers import free_port, spawn_worker

from copage.llm.fake_server import FakeServer, Reply, echo
from copage.stores import open_store


def _slow(delay: float) -> Any:
    return lambda body: Reply(text=echo(body).text, delay=delay)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    """Start ``copage serve`` at its defaults against an upstream; yields (url, db path)."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(upstream: FakeServer, *extra: str) -> tuple[str, Path]:
        port = free_port()
        data = tmp_path / "xdg"
        proc = spawn_worker(port, upstream.url, "", *extra,
                            env={"COPAGE_KEYS": "", "XDG_DATA_HOME": str(data)})
        procs.append(proc)
        return f"http://127.0.0.1:{port}", data / "copage" / "copage.db"

    yield start
    for p in procs:
        p.terminate()
        p.wait(10)


def _conversations(db: Path) -> list[list[tuple[str, str]]]:
    store = open_store(f"sqlite://{db}")
    try:
        out = []
        for info in store.list_conversations(tenant="default"):
            conv = store.load(info.id, tenant="default")
            out.append([(t.role, t.text) for t in conv.turns])
        return out
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.parametrize("key", [None, "retry-key-1"])
def test_sdk_retry_of_a_running_first_turn_joins_it(serve: Any, key: str | None) -> None:
    """SDK timeout 2 s, 2 retries, an upstream answering after 5 s: the retries wait for
    the first attempt instead of starting conversations of their own."""
    with FakeServer(_slow(5.0)) as up:
        url, db = serve(up)
        client = openai.OpenAI(base_url=url + "/v1", api_key="unused", timeout=2.0,
                               max_retries=2)
        extra = {"Idempotency-Key": key} if key else None
        messages: Any = [{"role": "user", "content": "hello there"}]
        r = client.chat.completions.with_raw_response.create(
            model="m", messages=messages, extra_headers=extra)
        answer = r.parse().choices[0].message.content
        assert answer == "echo: hello there"
        assert r.retries_taken >= 1, "the SDK did time out and retry"
        assert r.headers["x-copage-stats"] and '"replayed":true' in r.headers["x-copage-stats"]
        assert len(up.received) == 1, "one upstream call for the request and its retries"
        assert _conversations(db) == [[("user", "hello there"),
                                       ("assistant", "echo: hello there")]]
        # the conversation continues as usual
        r2 = client.chat.completions.create(
            model="m", messages=[*messages, {"role": "assistant", "content": answer},
                                 {"role": "user", "content": "again"}], timeout=30)
        assert r2.choices[0].message.content == "echo: again"
        assert len(_conversations(db)) == 1


@pytest.mark.slow
@pytest.mark.parametrize("headers", [{}, {"Idempotency-Key": "k-20"}])
def test_identical_concurrent_first_turns_make_one_conversation(
        serve: Any, headers: dict[str, str]) -> None:
    with FakeServer(_slow(1.0)) as up:
        url, db = serve(up)
        body = {"model": "m", "messages": [{"role": "user", "content": "same question"}]}

        def send(_: int) -> httpx.Response:
            return httpx.post(url + "/v1/chat/completions", json=body, headers=headers,
                              timeout=60)

        with ThreadPoolExecutor(20) as ex:
            results = list(ex.map(send, range(20)))
        assert [r.status_code for r in results] == [200] * 20
        assert {r.headers["x-copage-conversation"] for r in results} == {
            results[0].headers["x-copage-conversation"]}
        assert {r.json()["choices"][0]["message"]["content"] for r in results} == {
            "echo: same question"}
        assert len(up.received) == 1
        assert len(_conversations(db)) == 1


@pytest.mark.slow
def test_first_attempts_that_say_so_do_not_wait(serve: Any) -> None:
    """Identical requests each marked a first attempt (``X-Stainless-Retry-Count: 0``,
    two users asking the same thing) are not retries: they run side by side."""
    with FakeServer(_slow(1.0)) as up:
        url, db = serve(up)
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

        def send(_: int) -> httpx.Response:
            return httpx.post(url + "/v1/chat/completions", json=body, timeout=60,
                              headers={"X-Stainless-Retry-Count": "0"})

        with ThreadPoolExecutor(3) as ex:
            results = list(ex.map(send, range(3)))
        assert [r.status_code for r in results] == [200] * 3
        assert len(up.received) == 3
        assert len(_conversations(db)) == 3


def test_a_failed_second_look_releases_the_pending_lock(make_proxy: Any) -> None:
    """A request that waited for an identical one and then fails to look again (the
    index is down: 503) does not keep the first turn's pending lock held."""
    import threading
    import time

    with FakeServer(_slow(1.5)) as up:
        proxy = make_proxy(upstream=up.url, keys={}, lock_timeout=3.0)
        index = proxy.state.index
        body = {"model": "m", "messages": [{"role": "user", "content": "once"}]}
        results: dict[str, httpx.Response] = {}

        def send(name: str) -> None:
            results[name] = httpx.post(proxy.url + "/v1/chat/completions", json=body,
                                       timeout=30)

        first = threading.Thread(target=send, args=("a",))
        first.start()
        time.sleep(0.4)
        second = threading.Thread(target=send, args=("b",))
        second.start()
        time.sleep(0.4)  # b now waits for a; its second look will fail

        def broken(*args: Any) -> None:
            raise OSError("index down")

        index.find_prev = broken
        first.join()
        second.join()
        del index.find_prev
        assert results["a"].status_code == 200
        assert results["b"].status_code == 503, results["b"].text
        t0 = time.monotonic()
        send("c")
        assert results["c"].status_code == 200, results["c"].text
        assert time.monotonic() - t0 < 1.0, "no wait for a leftover lock"
        assert '"replayed":true' in results["c"].headers["x-copage-stats"]
        assert len(up.received) == 1


def test_a_turn_committed_between_the_look_and_the_pending_lock_is_found(
        make_proxy: Any) -> None:
    """The race the full suite once hit at two busy workers: request A looks (nothing
    committed), then is slow to take the pending lock; an identical B arrives, takes
    it, runs and commits meanwhile. A, once it holds the free lock, must look again
    and find B's turn, not start a second conversation."""
    import threading
    import time

    with FakeServer(_slow(0.3)) as up:
        proxy = make_proxy(upstream=up.url, keys={})
        service = proxy.state.service
        original = service.finder.hold_pending
        calls: list[float] = []

        async def slow_first(*args: Any) -> bool:
            calls.append(time.monotonic())
            if len(calls) == 1:  # A: looked already; B overtakes it here
                import asyncio

                await asyncio.sleep(1.5)
            return bool(await original(*args))

        service.finder.hold_pending = slow_first
        body = {"model": "m", "messages": [{"role": "user", "content": "overtaken"}]}
        results: dict[str, httpx.Response] = {}

        def send(name: str) -> None:
            results[name] = httpx.post(proxy.url + "/v1/chat/completions", json=body,
                                       timeout=30)

        a = threading.Thread(target=send, args=("a",))
        a.start()
        time.sleep(0.3)
        send("b")  # runs and commits while A sleeps before the lock
        a.join()
        assert len(calls) == 2
        assert results["a"].status_code == 200 and results["b"].status_code == 200
        assert '"replayed":true' in results["a"].headers["x-copage-stats"]
        assert results["a"].headers["x-copage-conversation"] == \
            results["b"].headers["x-copage-conversation"]
        assert len(up.received) == 1
