"""A PostgreSQL store whose connections the server ended (a restart, a failover,
``pg_terminate_backend``) replaces them and runs the statement once more, for the
store, its locks and the proxy's transcript index."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import psycopg
import pytest
from store_helpers import PG_URL

from copage.core.types import Turn
from copage.server.transcript import PostgresIndex
from copage.stores import open_store

pytestmark = pytest.mark.postgres


def terminate(app: str) -> int:
    """End every server session of ``app`` (the application_name the store connects as)."""
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        rows = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE application_name = %s", (app,)).fetchall()
    return len(rows)


def test_store_and_locks_survive_terminated_connections(pg_schema: Callable[[], str]) -> None:
    app = "copage_t_" + uuid.uuid4().hex[:10]
    schema = pg_schema()
    store = open_store(f"{PG_URL}?schema={schema}&application_name={app}")
    index = PostgresIndex(f"{PG_URL}?application_name={app}", schema)
    try:
        from copage.memory import PagedMemory

        mem = PagedMemory(store=store, conversation_id="c1")
        mem.add("user", "hello")
        with store.lock("c1"), store.lock("c2"):  # two lock connections kept idle after
            pass
        with store.try_lock("c3") as taken:
            assert taken
        index.put("default", "c1", "h1", "p1")
        assert terminate(app) >= 4, "the store's, the index's and two lock connections"
        for i in range(3):  # before: every one of these raised StoreError once or more
            with store.lock("c1"), store.lock("c2"):
                assert store.version("c1") is not None
                mem = PagedMemory(store=store, conversation_id="c1", create=False)
                mem.add("assistant", f"answer {i}")
        assert index.find_prev("default", "p1") == "c1"
        index.put("default", "c1", "h2", "p2")
        terminate(app)
        index.put("default", "c1", "h3", "p3")
        assert index.find_prev("default", "p3") == "c1"
        reloaded = PagedMemory(store=store, conversation_id="c1", create=False)
        assert [t.text for t in reloaded.turns] == ["hello", "answer 0", "answer 1",
                                                    "answer 2"]
        assert isinstance(reloaded.turns[0], Turn)
    finally:
        index.close()
        store.close()


def test_a_real_failure_is_still_an_error(pg_schema: Callable[[], str]) -> None:
    """Only a connection the server ended is retried: the store closed stays an error."""
    from copage.stores.protocol import StoreError

    store = open_store(f"{PG_URL}?schema={pg_schema()}")
    store.close()
    with pytest.raises(StoreError, match="closed"):
        store.version("c1")
