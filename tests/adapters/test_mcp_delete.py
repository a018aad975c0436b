"""The MCP delete_conversation tool: gone from the store and the pool's cache; per tenant."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from adapter_fixtures import PAGING, TURNS
from mcp import Client
from mcp_helpers import text

from copage import PagerConfig
from copage.adapters.mcp import ConversationPool, create_server

TURN_ARGS = [{"role": r, "content": t} for r, t in TURNS]


async def test_delete_conversation_tool() -> None:
    pool = ConversationPool(None, PagerConfig(**PAGING))
    async with Client(create_server(pool)) as c:
        await c.call_tool("append_turns", {"conversation": "me", "turns": TURN_ARGS[:6]})
        assert pool.cache.holds("default", "me")
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert tools["delete_conversation"].annotations.destructive_hint is True
        r = await c.call_tool("delete_conversation", {"conversation": "me"})
        assert not r.is_error and "Deleted conversation 'me'" in text(r)
        assert not pool.store.exists("me", tenant="default")
        assert not pool.cache.holds("default", "me")
        again = await c.call_tool("delete_conversation", {"conversation": "me"})
        assert again.is_error and "unknown conversation 'me'" in text(again)
    # another tenant's server cannot delete it
    async with Client(create_server(pool)) as c:
        await c.call_tool("append_turns", {"conversation": "kept", "turns": TURN_ARGS[:2]})
    async with Client(create_server(pool, tenant="other")) as c:
        r = await c.call_tool("delete_conversation", {"conversation": "kept"})
        assert r.is_error
    assert pool.store.exists("kept", tenant="default")
