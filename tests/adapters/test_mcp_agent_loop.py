"""Round trip: an agent loop finds a fact from an evicted page through the bookmarks.

The agent is a small tool loop around copage's shipped ``ScriptedModel`` (a test
tool, not a model result): it reads the bookmarks over MCP, picks the page whose
keywords share words with the question, recalls it and answers from the page.
The server is a real ``copage mcp`` process on streamable HTTP with an API key.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import httpx2
from adapter_fixtures import TURNS
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import http_server, sqlite_url, text

from copage.core.text import content_words
from copage.core.types import ToolCall
from copage.llm.chat_messages import assistant_message, tool_message
from copage.llm.model_types import ChatRequest, ChatResponse
from copage.llm.scripted import ScriptedModel

pytestmark = pytest.mark.slow
_BOOKMARK = re.compile(r"^\[(p\d+):([^\]]*)\]", re.MULTILINE)


async def run_agent(client: Client, model: ScriptedModel, question: str) -> str:
    """Chat model + MCP tools: call tools until the model answers (at most 6 calls)."""
    listed = (await client.list_tools()).tools
    tools = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                               "parameters": t.input_schema}} for t in listed]
    messages: list[dict[str, Any]] = [{"role": "system", "content": client.instructions or ""},
                                      {"role": "user", "content": question}]
    for _ in range(6):
        reply = await model.complete(ChatRequest(messages=tuple(messages), tools=tuple(tools)))
        if not reply.tool_calls:
            return reply.text
        messages.append(assistant_message(reply.text, reply.tool_calls))
        for call in reply.tool_calls:
            result = await client.call_tool(call.name, json.loads(call.arguments))
            messages.append(tool_message(call.id, text(result)))
    raise AssertionError("the agent did not answer")


def _call(name: str, args: dict[str, Any]) -> ChatResponse:
    return ChatResponse(text="", tool_calls=(ToolCall(f"call_{name}", name, json.dumps(args)),),
                        finish_reason="tool_calls")


def _question(req: ChatRequest) -> set[str]:
    return set(content_words(str(req.messages[1]["content"])))


def pick_page(req: ChatRequest) -> ChatResponse:
    """Recall the bookmark sharing most words with the question."""
    books = _BOOKMARK.findall(str(req.messages[-1]["content"]))
    assert books, "no bookmarks in the tool result"
    q = _question(req)
    page = max(books, key=lambda b: len(q & set(content_words(b[1]))))[0]
    return _call("recall_page", {"conversation": "me", "page": page})


def answer_from_page(req: ChatRequest) -> str:
    """Answer with the page line sharing most words with the question."""
    lines = str(req.messages[-1]["content"]).splitlines()
    q = _question(req)
    return max(lines, key=lambda line: len(q & set(content_words(line))))


async def test_agent_finds_an_evicted_fact_through_the_bookmarks(tmp_path: Path) -> None:
    with http_server(sqlite_url(tmp_path), keys="agent-key-123=agents") as url:
        http = httpx2.AsyncClient(headers={"Authorization": "Bearer agent-key-123"})
        async with Client(streamable_http_client(url, http_client=http)) as client:
            turns = [{"role": r, "content": t} for r, t in TURNS]
            await client.call_tool("append_turns", {"conversation": "me", "turns": turns})
            model = (ScriptedModel()
                     .then(lambda _req: _call("list_bookmarks", {"conversation": "me"}))
                     .then(pick_page).then(answer_from_page))
            answer = await run_agent(client, model, "What should I bring to the dentist?")
    assert "insurance card" in answer
    # The fact was not in the bookmarks: the agent had to recall page p3 to see it.
    bookmarks_seen = model.requests[1].messages[-1]["content"]
    assert "[p3:" in bookmarks_seen and "insurance" not in bookmarks_seen
    recall = model.requests[2].messages[-2]["tool_calls"][0]["function"]
    assert (recall["name"], json.loads(recall["arguments"])["page"]) == ("recall_page", "p3")
