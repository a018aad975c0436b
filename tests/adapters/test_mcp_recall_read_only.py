"""MCP recall_page reads a page without changing the conversation, and takes 3 for "p3"."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp")

from adapter_fixtures import PAGING, TURNS
from mcp import Client
from mcp_helpers import text

from copage import PagedMemory, PagerConfig
from copage.adapters.mcp import ConversationPool, create_server
from copage.stores.inmemory import MemoryStore

TURN_ARGS = [{"role": r, "content": t} for r, t in TURNS]


async def test_a_recalled_page_stays_evicted_listed_and_searchable() -> None:
    store = MemoryStore()
    async with Client(create_server(ConversationPool(store, PagerConfig(**PAGING)))) as c:
        await c.call_tool("append_turns", {"conversation": "me", "turns": TURN_ARGS})
        before = PagedMemory(store=store, conversation_id="me", create=False)
        assert "p1" in before.evicted
        page = await c.call_tool("recall_page", {"conversation": "me", "page": "p1"})
        assert not page.is_error and "locker code is 4471" in text(page)
        listed = text(await c.call_tool("list_bookmarks", {"conversation": "me"}))
        found = text(await c.call_tool("search_pages", {"conversation": "me",
                                                        "query": "gym locker code"}))
    assert "[p1:" in listed
    assert found.splitlines()[1].startswith("[p1:")
    after = PagedMemory(store=store, conversation_id="me", create=False)
    assert after.version == before.version  # nothing was written
    assert after.resident == before.resident and after.evicted == before.evicted


async def test_page_as_an_integer() -> None:
    async with Client(create_server(ConversationPool(None, PagerConfig(**PAGING)))) as c:
        await c.call_tool("append_turns", {"conversation": "me", "turns": TURN_ARGS})
        by_int = await c.call_tool("recall_page", {"conversation": "me", "page": 3})
        by_id = await c.call_tool("recall_page", {"conversation": "me", "page": "p3"})
        assert not by_int.is_error, text(by_int)
        assert text(by_int) == text(by_id) and text(by_int).startswith('<page id="p3">')
        for bad, says in ((0, "page id such as"), (9, "no page p9"), (True, "page")):
            r = await c.call_tool("recall_page", {"conversation": "me", "page": bad})
            assert r.is_error and says in text(r), (bad, text(r))
