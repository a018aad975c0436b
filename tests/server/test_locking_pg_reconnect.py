"""The proxy on PostgreSQL after the server ended every connection: no 503."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import psycopg
from proxy_helpers import PG_URL, Proxy


def test_turns_after_the_database_ended_every_connection(
        make_proxy: Callable[..., Proxy], pg_url: str) -> None:
    """Before: the next requests were 503 (``cannot take the lock ... terminating
    connection due to administrator command``) until every pooled connection had failed."""
    app = "copage_p_" + uuid.uuid4().hex[:10]
    proxy = make_proxy(store=f"{pg_url}&application_name={app}")
    client = proxy.client()
    history = [{"role": "user", "content": "q0"}]
    for i in range(1, 12):
        if i in (3, 8):
            with psycopg.connect(PG_URL, autocommit=True) as admin:
                ended = admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = %s", (app,)).fetchall()
            assert ended, "the proxy's connections were found"
        answer = client.chat.completions.create(model="m", messages=history)
        history += [{"role": "assistant", "content": answer.choices[0].message.content},
                    {"role": "user", "content": f"q{i}"}]
    convs = proxy.state.store.list_conversations(tenant="alice")
    assert len(convs) == 1, "every turn continued the one conversation"
