"""The adapters on the real PostgreSQL store (fresh schema per test)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from adapter_fixtures import PAGING, TURNS

from copage import PagerConfig
from copage.stores import open_store

PG_URL = os.environ.get("COPAGE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_url() -> Iterator[str]:
    psycopg = pytest.importorskip("psycopg")
    try:
        psycopg.connect(PG_URL, connect_timeout=3).close()
    except psycopg.Error as e:
        if os.environ.get("COPAGE_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"COPAGE_REQUIRE_POSTGRES=1 but PostgreSQL is unreachable: {e}")
        pytest.skip(f"PostgreSQL at {PG_URL} unreachable: {e}")
    schema = f"copage_test_{os.getpid()}_{uuid.uuid4().hex[:10]}"
    yield f"{PG_URL}?schema={schema}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def test_mcp_tools_on_postgres(pg_url: str) -> None:
    pytest.importorskip("mcp")
    from mcp import Client
    from mcp_helpers import text

    from copage.adapters.mcp import ConversationPool, create_server

    pool = ConversationPool(open_store(pg_url), PagerConfig(**PAGING))
    try:
        async with Client(create_server(pool, tenant="t1")) as c:
            turns = [{"role": r, "content": t} for r, t in TURNS]
            assert not (await c.call_tool("append_turns", {"conversation": "me",
                                                           "turns": turns})).is_error
            page = await c.call_tool("recall_page", {"conversation": "me", "page": "p3"})
            assert "insurance card" in text(page)
            assert "me: 20 turns" in text(await c.call_tool("list_conversations", {}))
    finally:
        pool.close()


async def test_agents_session_on_postgres(pg_url: str) -> None:
    pytest.importorskip("agents")
    from copage.adapters.agents import CopageSession

    session = CopageSession("s1", pg_url, **PAGING)
    await session.add_items([{"role": r if r == "user" else "assistant", "content": t}
                             for r, t in TURNS])
    assert (await session.pop_item())["content"] == TURNS[-1][1]
    again = CopageSession("s1", pg_url)
    items = await again.get_items()
    assert items[-1]["content"] == TURNS[-2][1] and "[p1: 4471" in items[0]["content"]
    session.store.close()
    again.store.close()
