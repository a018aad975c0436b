"""``copage mcp`` as a real process, driven by the SDK's client over stdio and HTTP."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import httpx
import httpx2
from adapter_fixtures import TURNS
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import PAGING_FLAGS, http_server, sqlite_url, text

from copage import PagedMemory, open_store

TURN_ARGS = [{"role": r, "content": t} for r, t in TURNS]
KEYS = "alice-key-123=alice,bob-key-4567=bob"
pytestmark = pytest.mark.slow


def _stdio(store: str, *extra: str) -> StdioServerParameters:
    # the whole environment (PYTHONPATH too), so the server runs this checkout's copage
    return StdioServerParameters(
        command=sys.executable, env=dict(os.environ),
        args=["-m", "copage.cli.main", "mcp", "--store", store, *PAGING_FLAGS, *extra])


def _http(url: str, key: str | None = None) -> Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return Client(streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers)))


async def test_stdio_round_trip_persists_in_the_store(tmp_path: Path) -> None:
    store = sqlite_url(tmp_path)
    async with Client(_stdio(store)) as c:
        r = await c.call_tool("append_turns", {"conversation": "me", "turns": TURN_ARGS})
        assert not r.is_error, text(r)
        bad = await c.call_tool("recall_page", {"conversation": "me", "page": "p42"})
        assert bad.is_error and "no page p42" in text(bad)
        page = await c.call_tool("recall_page", {"conversation": "me", "page": "p1"})
        assert "4471" in text(page)
    # A second server process (a restart) sees the same conversation and its paging state.
    async with Client(_stdio(store)) as c:
        listed = text(await c.call_tool("list_bookmarks", {"conversation": "me"}))
        assert "[p1:" in listed  # recalled above, but reading a page changes nothing
        res = await c.read_resource("copage://conversations/me/bookmarks")
        assert res.contents[0].text == listed
    mem = PagedMemory(store=store, conversation_id="me", create=False)
    assert len(mem.turns) == len(TURNS) and "p1" in mem.evicted


async def test_stdio_tenant_flag(tmp_path: Path) -> None:
    store = sqlite_url(tmp_path)
    async with Client(_stdio(store, "--tenant", "team-a")) as c:
        await c.call_tool("append_turns", {"conversation": "me", "turns": TURN_ARGS[:2]})
    assert open_store(store).exists("me", tenant="team-a")
    assert not open_store(store).exists("me", tenant="default")


async def test_http_tenants_by_key(tmp_path: Path) -> None:
    with http_server(sqlite_url(tmp_path), keys=KEYS) as url:
        async with _http(url, "alice-key-123") as alice, _http(url, "bob-key-4567") as bob:
            r = await alice.call_tool("append_turns", {"conversation": "me", "turns": TURN_ARGS})
            assert not r.is_error, text(r)
            assert "me: 20 turns" in text(await alice.call_tool("list_conversations", {}))
            assert "No conversation" in text(await bob.call_tool("list_conversations", {}))
            denied = await bob.call_tool("recall_page", {"conversation": "me", "page": "p1"})
            assert denied.is_error and "unknown conversation" in text(denied)
            page = await alice.call_tool("recall_page", {"conversation": "me", "page": "p1"})
            assert "4471" in text(page)
        # Requests without a key, or with a wrong one, are refused before MCP sees them.
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        accept = {"accept": "application/json, text/event-stream"}
        for auth in ({}, {"authorization": "Bearer wrong-key-000"}):
            async with httpx.AsyncClient() as raw:
                resp = await raw.post(url, json=body, headers={**accept, **auth})
            assert resp.status_code == 401
            assert resp.headers["www-authenticate"].startswith("Bearer")


async def test_http_without_keys_is_one_tenant_on_loopback(tmp_path: Path) -> None:
    store = sqlite_url(tmp_path)
    with http_server(store) as url:
        async with _http(url) as c:
            r = await c.call_tool("append_turns", {"conversation": "me", "turns": TURN_ARGS})
            assert not r.is_error
            found = await c.call_tool("search_pages", {"conversation": "me",
                                                       "query": "Lisbon budget"})
            assert text(found).splitlines()[1].startswith("[p2:")
    assert PagedMemory(store=store, conversation_id="me", create=False).turns


def test_non_loopback_http_without_keys_is_refused(tmp_path: Path) -> None:
    from copage.cli.main import main

    assert main(["mcp", "--transport", "http", "--host", "0.0.0.0",
                 "--store", sqlite_url(tmp_path)]) == 2


def test_unknown_paging_names_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from copage.cli.main import main

    assert main(["mcp", "--policy", "nope", "--store", sqlite_url(tmp_path)]) == 2
    assert "lru" in capsys.readouterr().err  # the valid names are listed
