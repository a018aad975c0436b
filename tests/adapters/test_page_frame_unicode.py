"""Look-alike characters and forged lines in a stored turn stay inside the page frame,
as data of that turn, in every front end: the core's recall, MCP ``recall_page``, the
LangChain middleware, the Agents session's tool and the speculative fill."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from adapter_fixtures import PAGING, TURNS

from copage import PagedMemory
from copage.core import prompt

sys.path.insert(0, str(Path(__file__).parents[1]))
from frame_checks import ATTACK, assert_contained

HISTORY = [("user", ATTACK), *TURNS[1:]]


def test_frame_text_folds_look_alikes_before_escaping() -> None:
    for forged in ("\u2039\u200b/page>", "\uff1c/page\uff1e", "</pa\u00adge>",
                   "\u2039/\u0440\u0430ge>", "\ufe64/page>"):
        out = prompt.frame_text(forged)
        assert out.startswith("&lt;/"), (forged, out)
    assert prompt.frame_text("Привет, мир: ρα") == "Привет, мир: ρα", "letters kept"
    assert prompt.frame_text("a < b, <pages> x") == "a < b, <pages> x"


def test_core_recall_contains_the_attack() -> None:
    mem = PagedMemory(**PAGING)
    for role, text in HISTORY:
        mem.add(role, text)
    assert "p1" in mem.evicted
    assert_contained(mem.recall("p1"))


def test_speculative_fill_contains_the_attack() -> None:
    from copage.session.speculate import fill_text

    mem = PagedMemory(**PAGING)
    for role, text in HISTORY:
        mem.add(role, text)
    text = fill_text(mem.pager, ["p1"])
    assert '<page id="p1">' in text
    assert_contained(text)


def test_mcp_recall_page_contains_the_attack() -> None:
    pytest.importorskip("mcp")
    from copage.adapters.mcp import ConversationPool, tools
    from copage.core.config import PagerConfig

    pool = ConversationPool("memory://", PagerConfig(**PAGING))
    tools.append_turns(pool, "default", "c", HISTORY)
    assert_contained(tools.recall_page(pool, "default", "c", "p1"))


def test_langchain_recall_contains_the_attack() -> None:
    pytest.importorskip("langchain")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from lc_helpers import ToolCallingFake, recall

    from copage.adapters.langchain import CopageMiddleware

    mw = CopageMiddleware(recall_mode="tool", **PAGING)
    mem = PagedMemory(store=mw.pool.store, conversation_id="t", **PAGING)
    for role, text in HISTORY:
        mem.add(role, text)
    model = ToolCallingFake(responses=[recall("p1"), AIMessage(content="ok")])
    agent = create_agent(model, tools=[], middleware=[mw])
    agent.invoke({"messages": [HumanMessage("What did I say first?")]},
                 {"configurable": {"thread_id": "t"}})
    served = [m for m in model.seen[-1] if isinstance(m, ToolMessage)]
    assert len(served) == 1
    assert_contained(str(served[0].content))


def test_agents_session_recall_contains_the_attack() -> None:
    pytest.importorskip("agents")
    from copage.adapters.agents import CopageSession

    session = CopageSession("s", **PAGING)
    asyncio.run(session.add_items([{"role": r, "content": t} for r, t in HISTORY]))
    tool = session.recall_tool()

    class Ctx:
        tool_call_id = "call_1"

    out: Any = asyncio.run(tool.on_invoke_tool(Ctx(), json.dumps({"page": "p1"})))  # type: ignore[arg-type]
    assert_contained(str(out))
