"""The proxy and its inspector reach a conversation the Agents session stored as ``ID~pop``."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from proxy_helpers import KEY_A

pytest.importorskip("agents")

from copage.adapters.agents import CopageSession


async def test_agents_pop_twin_is_reachable_through_the_proxy(make_proxy: Any) -> None:
    proxy = make_proxy(store="sqlite")
    # Pages of 3 turns: the third item closes a page, so popping it from another session
    # object (which did not add it: no take-back) rebuilds the conversation under its
    # ``~pop`` twin (a pop inside the open page is one commit).
    session = CopageSession("notes", proxy.state.store, tenant="alice", boundary="fixed_3")
    await session.add_items([{"role": "user", "content": "one"},
                             {"role": "assistant", "content": "two"},
                             {"role": "user", "content": "three"}])
    other = CopageSession("notes", proxy.state.store, tenant="alice", boundary="fixed_3")
    await other.pop_item()  # now stored as notes~pop
    assert proxy.state.store.exists("notes~pop", tenant="alice")
    auth = {"authorization": f"Bearer {KEY_A}"}
    async with httpx.AsyncClient(base_url=proxy.url, headers=auth, timeout=30) as c:
        listed = (await c.get("/ui/api/conversations")).json()["conversations"]
        assert [x["id"] for x in listed] == ["notes~pop"]
        r = await c.get("/ui/api/conversations/notes~pop")
        assert r.status_code == 200, r.text
        assert r.json()["stats"]["turns"] == 2
        metered = r.json()["stats"]["prompt_cache"]["requests"]  # the stored meter's
        r = await c.post("/v1/chat/completions", headers={"X-Copage-Conversation": "notes~pop"},
                         json={"model": "m", "messages": [{"role": "user", "content": "four"}]})
        assert r.status_code == 200, r.text
        assert r.headers["x-copage-conversation"] == "notes~pop"
        r = await c.get("/ui/api/conversations/notes~pop")
        assert r.json()["stats"]["prompt_cache"]["requests"] == metered + 1
        r = await c.post("/v1/chat/completions", headers={"X-Copage-Conversation": "me@home"},
                         json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200, r.text
