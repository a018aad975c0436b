"""Page p1 recalled through each front end, for the page frame tests: the same stored
history, the text each front end gives the model for ``recall("p1")``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from adapter_fixtures import PAGING

from copage import PagedMemory

History = Sequence[tuple[str, str]]


def core(history: History) -> str:
    mem = PagedMemory(**PAGING)
    for role, text in history:
        mem.add(role, text)
    assert "p1" in mem.evicted
    return mem.recall("p1")


def mcp(history: History) -> str:
    pytest.importorskip("mcp")
    from copage.adapters.mcp import ConversationPool
    from copage.adapters.mcp import handlers as tools
    from copage.core.config import PagerConfig

    pool = ConversationPool("memory://", PagerConfig(**PAGING))
    tools.append_turns(pool, "default", "c", list(history))
    return tools.recall_page(pool, "default", "c", "p1")


def langchain(history: History) -> str:
    pytest.importorskip("langchain")
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from lc_helpers import ToolCallingFake, recall

    from copage.adapters.langchain import CopageMiddleware

    mw = CopageMiddleware(recall_mode="tool", **PAGING)
    mem = PagedMemory(store=mw.pool.store, conversation_id="t", **PAGING)
    for role, text in history:
        mem.add(role, text)
    model = ToolCallingFake(responses=[recall("p1"), AIMessage(content="ok")])
    agent = create_agent(model, tools=[], middleware=[mw])
    agent.invoke({"messages": [HumanMessage("What did I say first?")]},
                 {"configurable": {"thread_id": "t"}})
    served = [m for m in model.seen[-1] if isinstance(m, ToolMessage)]
    assert len(served) == 1
    return str(served[0].content)


def agents(history: History) -> str:
    pytest.importorskip("agents")
    from copage.adapters.agents import CopageSession

    session = CopageSession("s", **PAGING)
    asyncio.run(session.add_items([{"role": r, "content": t} for r, t in history]))
    tool = session.recall_tool()

    class Ctx:
        tool_call_id = "call_1"

    out: Any = asyncio.run(tool.on_invoke_tool(Ctx(), json.dumps({"page": "p1"})))  # type: ignore[arg-type]
    return str(out)


RECALLERS: dict[str, Callable[[History], str]] = {
    "core": core, "mcp": mcp, "langchain": langchain, "agents": agents}
"""Each front end's recall of p1, by name."""
