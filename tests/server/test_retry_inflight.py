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

from copage.server.testing import FakeUpstream, Reply, echo
from copage.stores import open_store


def _slow(delay: float) -> Any:
    return lambda body: Reply(text=echo(body).text, delay=delay)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    """Start ``copage serve`` at its defaults against an upstream; yields (url, db path)."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(upstream: FakeUpstream, *extra: str) -> tuple[str, Path]:
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
    with FakeUpstream(_slow(5.0)) as up:
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
    with FakeUpstream(_slow(1.0)) as up:
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
    with FakeUpstream(_slow(1.0)) as up:
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
