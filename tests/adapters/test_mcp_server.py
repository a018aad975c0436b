"""The MCP server through the SDK's own client, in process (tools, resource, errors)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("mcp")

from adapter_fixtures import PAGING, TURNS
from mcp import Client, MCPError
from mcp_helpers import text

from copage import PagedMemory, PagerConfig
from copage.adapters.mcp import BOOKMARKS_URI, ConversationPool, create_server

TURN_ARGS = [{"role": r, "content": t} for r, t in TURNS]


def _server(pool: ConversationPool | None = None, **kw: Any) -> Any:
    return create_server(pool or ConversationPool(None, PagerConfig(**PAGING)), **kw)


async def test_tools_are_listed_with_descriptions_and_schemas() -> None:
    async with Client(_server()) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        assert set(tools) == {"append_turns", "list_bookmarks", "recall_page", "search_pages",
                              "list_conversations", "delete_conversation"}
        assert "instead of guessing" in (tools["list_bookmarks"].description or "")
        assert "before answering" in (tools["recall_page"].description or "")
        assert tools["recall_page"].input_schema["required"] == ["conversation", "page"]
        assert tools["list_bookmarks"].annotations.read_only_hint is True
        assert "recall_page" in (c.instructions or "")
        templates = (await c.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == [BOOKMARKS_URI]


async def test_append_list_recall_search_and_resource() -> None:
    pool = ConversationPool(None, PagerConfig(**PAGING))
    async with Client(_server(pool)) as c:
        r = await c.call_tool("append_turns", {"conversation": "me", "turns": TURN_ARGS[:12]})
        assert not r.is_error
        r = await c.call_tool("append_turns", {"conversation": "me", "turns": TURN_ARGS[12:]})
        assert "now 20 turns, 5 pages (2 resident, 3 evicted)" in text(r)
        assert "[p3:" in text(r) and "[p1:" not in text(r)  # only pages this call evicted

        listed = text(await c.call_tool("list_bookmarks", {"conversation": "me"}))
        mem = PagedMemory(store=pool.store, conversation_id="me", create=False)
        for p in mem.evicted:
            assert mem.bookmarks()[p].text in listed
        assert "[p4:" not in listed  # resident pages are not bookmarked by default
        everything = text(await c.call_tool("list_bookmarks",
                                            {"conversation": "me", "include_resident": True}))
        assert "[p4:" in everything and "(resident)" in everything

        res = await c.read_resource("copage://conversations/me/bookmarks")
        assert res.contents[0].text == listed

        found = text(await c.call_tool("search_pages", {"conversation": "me",
                                                        "query": "dentist appointment"}))
        assert found.splitlines()[1].startswith("[p3:")
        cat = text(await c.call_tool("search_pages", {"conversation": "me", "query": "Biscuit"}))
        assert cat.splitlines()[1].startswith("[p5:") and cat.splitlines()[1].endswith(
            "(resident)")  # resident pages are searched too: the client holds none of them
        assert text(await c.call_tool("search_pages", {
            "conversation": "me", "query": "Biscuit", "include_resident": False})).startswith(
            "No evicted page of 'me' matches")

        page = text(await c.call_tool("recall_page", {"conversation": "me", "page": "p1"}))
        assert "locker code is 4471" in page and page.startswith('<page id="p1">')
        mem.reload()
        # read-only: an MCP client holds no resident page, so p1 stays evicted and listed
        assert "p1" in mem.evicted and "p1" not in mem.resident
        assert "[p1:" in text(await c.call_tool("list_bookmarks", {"conversation": "me"}))
        again = text(await c.call_tool("recall_page", {"conversation": "me", "page": "p5"}))
        assert again.startswith('<page id="p5">')  # resident pages give their text too

        convs = text(await c.call_tool("list_conversations", {}))
        assert "me: 20 turns, 5 pages" in convs


@pytest.mark.parametrize(("tool", "args", "message"), [
    ("recall_page", {"conversation": "me", "page": "p99"}, "no page p99"),
    ("recall_page", {"conversation": "me", "page": "the locker one"}, "page id such as"),
    ("recall_page", {"conversation": "ghost", "page": "p1"}, "Known conversations: me"),
    ("recall_page", {"conversation": "me"}, "page"),
    ("recall_page", {"conversation": "a/b", "page": "p1"}, "conversation must be an id"),
    ("list_bookmarks", {"conversation": ""}, "conversation must be an id"),
    ("search_pages", {"conversation": "me", "query": "   "}, "query is empty"),
    ("search_pages", {"conversation": "me", "query": "x", "limit": 0}, "limit"),
    ("append_turns", {"conversation": "me", "turns": []}, "turns"),
    ("append_turns", {"conversation": "me", "turns": [{"role": "robot", "content": "hi"}]},
     "role"),
    ("append_turns", {"conversation": "me", "turns": [{"role": "user", "content": "hi",
                                                       "extra": 1}]}, "extra"),
    ("append_turns", {"conversation": "me", "turns": "hello"}, "turns"),
    ("list_conversations", {"limit": "many"}, "limit"),
    ("no_such_tool", {}, "no_such_tool"),
])
async def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(
        tool: str, args: dict[str, Any], message: str) -> None:
    async with Client(_server()) as c:
        await c.call_tool("append_turns", {"conversation": "me", "turns": TURN_ARGS})
        r = await c.call_tool(tool, args)
        assert r.is_error
        assert message in text(r)
        ok = await c.call_tool("recall_page", {"conversation": "me", "page": "p2"})
        assert not ok.is_error and "1800 euros" in text(ok)


async def test_a_rejected_append_stores_nothing() -> None:
    pool = ConversationPool(None, PagerConfig(**PAGING))
    async with Client(_server(pool)) as c:
        await c.call_tool("append_turns", {"conversation": "me", "turns": TURN_ARGS[:4]})
        bad = [{"role": "user", "content": "fine"}, {"role": "user", "content": "bad \ud800"}]
        r = await c.call_tool("append_turns", {"conversation": "me", "turns": bad})
        assert r.is_error
        assert len(PagedMemory(store=pool.store, conversation_id="me", create=False).turns) == 4


async def test_unknown_conversation_resource_is_an_mcp_error() -> None:
    async with Client(_server()) as c:
        with pytest.raises(MCPError, match="unknown conversation 'ghost'"):
            await c.read_resource("copage://conversations/ghost/bookmarks")


async def test_tenants_see_only_their_conversations() -> None:
    pool = ConversationPool(None, PagerConfig(**PAGING))
    async with Client(_server(pool, tenant="alice")) as a, \
            Client(_server(pool, tenant="bob")) as b:
        await a.call_tool("append_turns", {"conversation": "shared-name", "turns": TURN_ARGS})
        assert "shared-name" in text(await a.call_tool("list_conversations", {}))
        assert "No conversation" in text(await b.call_tool("list_conversations", {}))
        r = await b.call_tool("recall_page", {"conversation": "shared-name", "page": "p1"})
        assert r.is_error and "unknown conversation" in text(r)


async def test_at_the_default_paging_a_short_conversation_is_listed_and_searched() -> None:
    """At the server's default paging nothing is evicted while the conversation fits the
    budget; its pages are listed and searched all the same (the client holds none)."""
    pool = ConversationPool(None, PagerConfig(keywords="heuristic"))
    async with Client(_server(pool)) as c:
        await c.call_tool("append_turns", {"conversation": "me", "turns": TURN_ARGS})
        listed = text(await c.call_tool("list_bookmarks", {"conversation": "me"}))
        assert "0 evicted" in listed and "[p1:" in listed and "(resident)" in listed
        found = text(await c.call_tool("search_pages", {"conversation": "me",
                                                        "query": "gym locker"}))
        assert found.startswith("Pages of 'me' matching")
        mem = PagedMemory(store=pool.store, conversation_id="me", create=False)
        locker = next(p.id for p in mem.pages if "locker code is 4471" in p.text)
        best = found.splitlines()[1]
        assert best.startswith(f"[{locker}:") and best.endswith("(resident)")
        evicted = text(await c.call_tool("search_pages", {
            "conversation": "me", "query": "gym locker", "include_resident": False}))
        assert evicted == "No evicted page of 'me' matches 'gym locker' (no page is evicted yet)."


async def test_the_open_page_is_read_and_found() -> None:
    """The turns not yet closed into a page: recall_page reads them by the id the open
    page will take, search_pages names it when it holds the query's words."""
    pool = ConversationPool(None, PagerConfig(**PAGING))
    async with Client(_server(pool)) as c:
        await c.call_tool("append_turns", {"conversation": "me", "turns": TURN_ARGS + [
            {"role": "user", "content": "My sister Ana moved to Porto last spring."}]})
        listed = text(await c.call_tool("list_bookmarks", {"conversation": "me"}))
        assert "1 turn(s) in the open page p6 (recall_page reads it)." in listed
        opened = text(await c.call_tool("recall_page", {"conversation": "me", "page": "p6"}))
        assert opened.startswith("The open page p6 (the latest 1 turn(s)")
        assert '<page id="p6">' in opened and "moved to Porto" in opened
        found = text(await c.call_tool("search_pages", {"conversation": "me",
                                                        "query": "Ana Porto"}))
        assert found.startswith("No page of 'me' matches") and "open page p6" in found
        found = text(await c.call_tool("search_pages", {"conversation": "me",
                                                        "query": "Biscuit Porto"}))
        assert found.splitlines()[1].startswith("[p5:") and "open page p6" in found
        assert "open page" not in text(await c.call_tool("search_pages", {
            "conversation": "me", "query": "Biscuit"}))
        bad = await c.call_tool("recall_page", {"conversation": "me", "page": "p7"})
        assert bad.is_error and "p6 is its open page" in text(bad)
