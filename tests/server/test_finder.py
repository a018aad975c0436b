"""Continuing a Responses ``previous_response_id``: concurrent continuations of one id
fork like sequential ones, and a deleted conversation's ids are all unknown."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import openai
import pytest
from proxy_helpers import KEY_A, Proxy

from copage.llm.fake_server import Reply, echo
from copage.memory import PagedMemory


def _turns(proxy: Proxy, cid: str) -> list[tuple[str, str]]:
    mem = PagedMemory(store=proxy.state.store, conversation_id=cid, tenant="alice",
                      create=False)
    return [(t.role, t.text) for t in mem.turns]


@pytest.mark.parametrize("store", ["memory://", "sqlite", "postgres"])
@pytest.mark.parametrize("n", [3, 10])
def test_concurrent_continuations_of_one_response_fork(
        make_proxy: Callable[..., Proxy], store: str, n: int,
        request: pytest.FixtureRequest) -> None:
    """Sent at once, n continuations of one response make n branches, each holding the
    root exchange and its own input only (before: one conversation, each request's
    context holding its siblings' turns)."""
    if store == "postgres":
        store = request.getfixturevalue("pg_url")
    proxy = make_proxy(store=store)

    def slow(body: dict[str, Any]) -> Reply:
        reply = echo(body)
        reply.delay = 0.3  # the turns overlap: each holds its conversation this long
        return reply

    client = proxy.client()
    root = client.responses.create(model="m", input="root")
    proxy.upstream.responder = slow

    def branch(i: int) -> Any:
        return proxy.client(timeout=60).responses.create(
            model="m", input=f"branch{i}", previous_response_id=root.id)

    with ThreadPoolExecutor(n) as ex:
        answers = list(ex.map(branch, range(n)))
    assert [a.output_text for a in answers] == [f"echo: branch{i}" for i in range(n)]
    for body in proxy.upstream.received[1:]:
        said = [m["content"] for m in body["messages"] if m["role"] == "user"]
        assert not any(s.startswith("branch") for s in said[:-1]), said
    convs = [c.id for c in proxy.state.store.list_conversations(tenant="alice")]
    assert len(convs) == n, "one conversation per branch (the root's holds one of them)"
    for i, a in enumerate(answers):
        # each branch continues from its own response id
        nxt = client.responses.create(model="m", input=f"more{i}", previous_response_id=a.id)
        assert nxt.output_text == f"echo: more{i}"
        sent = proxy.upstream.received[-1]["messages"]
        said = [m["content"] for m in sent if m["role"] == "user"]
        assert f"branch{i}" in " ".join(said) and not any(
            f"branch{j}" in " ".join(said) for j in range(n) if j != i), said


def test_continuing_a_deleted_conversation_is_not_found(proxy: Proxy) -> None:
    """Every response id of a deleted conversation, its latest included, answers 400
    ``previous_response_not_found`` (before: the latest one started a new conversation
    under the deleted id, 200)."""
    client = proxy.client()
    first = client.responses.create(model="m", input="u1")
    latest = client.responses.create(model="m", input="u2", previous_response_id=first.id)
    cid = proxy.state.store.list_conversations(tenant="alice")[0].id
    r = httpx.delete(f"{proxy.url}/v1/conversations/{cid}",
                     headers={"Authorization": f"Bearer {KEY_A}"})
    assert r.status_code in (200, 204), r.text
    n = len(proxy.upstream.received)
    for rid in (first.id, latest.id):
        with pytest.raises(openai.BadRequestError) as err:
            client.responses.create(model="m", input="again", previous_response_id=rid)
        assert err.value.code == "previous_response_not_found"
    assert len(proxy.upstream.received) == n, "refused before any upstream call"
    assert proxy.state.store.list_conversations(tenant="alice") == []
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(latest.id)


def test_concurrent_continuations_fork_across_two_workers(pg_url: str) -> None:
    """Two ``copage serve`` processes on one PostgreSQL schema: 10 continuations of one
    response, sent at once to both, make 10 branches, none holding a sibling's input."""
    import openai as sdk
    from proxy_helpers import free_port, spawn_worker

    from copage.llm.fake_server import FakeServer
    from copage.stores import open_store

    def slow(body: dict[str, Any]) -> Reply:
        reply = echo(body)
        reply.delay = 0.3
        return reply

    with FakeServer(slow) as up:
        ports = [free_port(), free_port()]
        procs = [spawn_worker(p, up.url, pg_url) for p in ports]
        try:
            def client(i: int) -> sdk.OpenAI:
                return sdk.OpenAI(base_url=f"http://127.0.0.1:{ports[i % 2]}/v1",
                                  api_key=KEY_A, max_retries=0, timeout=60)

            root = client(0).responses.create(model="m", input="root")
            with ThreadPoolExecutor(10) as ex:
                answers = list(ex.map(lambda i: client(i).responses.create(
                    model="m", input=f"branch{i}", previous_response_id=root.id), range(10)))
            assert [a.output_text for a in answers] == [f"echo: branch{i}" for i in range(10)]
            for body in up.received[1:]:
                said = [m["content"] for m in body["messages"] if m["role"] == "user"]
                assert not any(s.startswith("branch") for s in said[:-1]), said
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=30)
    store = open_store(pg_url)
    try:
        assert len(store.list_conversations(tenant="alice")) == 10
    finally:
        store.close()
