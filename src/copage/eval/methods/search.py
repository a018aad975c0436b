"""The search-tool baseline: a free-form ``memory_search(query)`` tool, no bookmarks.

Paper section 4 (inspired by MemGPT, Packer et al. 2023): "model receives a
free-form memory_search tool with no bookmarks; the backend ranks evicted
sessions by BM25 and returns the top-3". The window is the one of ``bm25`` (the
last ``window`` turns, at most half the budget); evicted units are those with
turns before it. The backend returns the matching units, best first, that fit in
what is left of the budget when the call is made (so every call stays within it).

LLM-free reference reader: it searches once with the question itself. With the
same backend, its offline coverage is that of ``bm25`` less what the tool call's
own tokens take: by construction. What sets the two apart is the query a model
writes, which only a model run measures.
"""

from __future__ import annotations

import json
from typing import Any

from copage.eval.datasets.model import Conversation, Probe
from copage.eval.methods.base import (
    INSTRUCTION,
    MethodAnswer,
    MethodPrompt,
    MethodSettings,
    RecallInfo,
    message_tokens,
)
from copage.eval.methods.calls import Recorder
from copage.eval.methods.units import Unit
from copage.eval.methods.window import WindowConversation, bm25_scorer
from copage.llm.messages import assistant_message, tool_message
from copage.llm.types import ChatModel, ChatRequest

TOOL_NAME = "memory_search"
SEARCH_HINT = (
    " Older parts of the conversation are not shown. To look something up in them, "
    "call memory_search(query) with a few words; it returns the best matching earlier "
    "parts of the conversation."
)


def search_tool_schema() -> dict[str, Any]:
    """The ``memory_search`` tool in OpenAI format."""
    return {"type": "function", "function": {
        "name": TOOL_NAME,
        "description": "Search the older, hidden part of this conversation; returns the "
                       "best matching earlier parts.",
        "parameters": {"type": "object", "properties": {"query": {
            "type": "string", "description": "Words describing what you are looking for."}},
            "required": ["query"]},
    }}


NO_MATCH = "No earlier part of the conversation matches."
NO_ROOM = "No room left in the prompt for more earlier parts of the conversation."


class SearchConversation(WindowConversation):
    """A conversation with the recent window and a search backend over evicted units."""

    def search(self, query: str, room: int) -> tuple[list[Unit], str, str | None]:
        """Units matching ``query`` that fit in ``room`` tokens, the tool result text, and
        why fewer were returned than matched (None: the room)."""
        found, limit = self.pack(query, room)
        if not found:
            return [], (NO_ROOM if limit is None else NO_MATCH), limit
        return found, self.blocks(found), limit

    def _first(self, probe: Probe) -> list[dict[str, Any]]:
        return self._messages(probe, [], self.start)

    def _room(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        return self.settings.budget - message_tokens(messages, tools, self.tokenizer)

    def build(self, probe: Probe) -> MethodPrompt:
        """The prompt after the reference reader's one search (query = the question)."""
        tools = [search_tool_schema()]
        window_ids = frozenset(t.id for t in self.turns[self.start :])
        needed, evicted = self._needed(probe, window_ids)
        call = {"id": "ref_1", "type": "function",
                "function": {"name": TOOL_NAME, "arguments": json.dumps({"query": probe.question})}}
        msgs = [*self._first(probe), {"role": "assistant", "content": None, "tool_calls": [call]}]
        found, text, limit = self.search(probe.question, self._room(msgs, tools))
        msgs.append(tool_message("ref_1", text))
        return MethodPrompt(msgs, tools, self._visible(found, self.start),
                            message_tokens(msgs, tools, self.tokenizer), needed, evicted,
                            routed=",".join(u.id for u in found) or None, limit=limit)

    async def answer(self, probe: Probe, model: ChatModel) -> MethodAnswer:
        """The tool loop: searches served until an answer or ``max_recalls`` searches."""
        messages: list[dict[str, Any]] = self._first(probe)
        tools = (search_tool_schema(),)
        window_ids = frozenset(t.id for t in self.turns[self.start :])
        needed, evicted = self._needed(probe, window_ids)
        rec = Recorder(model, self.tokenizer)
        infos: list[RecallInfo] = []
        text = ""
        for _ in range(self.settings.max_recalls + 2):
            capped = len(infos) >= self.settings.max_recalls
            response = await rec.complete(ChatRequest(
                messages=tuple(messages), tools=() if capped else tools,
                temperature=self.settings.temperature, max_tokens=self.settings.max_tokens,
            ))
            text = response.text
            if not response.tool_calls or capped:
                break
            messages.append(assistant_message(response.text, response.tool_calls))
            for call in response.tool_calls:
                query = _query(call.arguments)
                units: list[Unit]
                if call.name != TOOL_NAME or query is None:
                    result, units = f"error: the only tool is {TOOL_NAME}(query).", []
                    status = "error"
                else:
                    units, result, _ = self.search(query, self._room(messages, list(tools)))
                    status = "ok"
                infos.append(RecallInfo(call.name, call.arguments[:300], status,
                                        pages=tuple(u.id for u in units)))
                messages.append(tool_message(call.id, result))
        return MethodAnswer(text, tuple(rec.calls), needed, evicted, tuple(infos))


def _query(arguments: str) -> str | None:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return arguments.strip() or None
    if isinstance(value, dict):
        q = value.get("query")
        return q if isinstance(q, str) and q.strip() else None
    return value if isinstance(value, str) and value.strip() else None


class SearchToolMethod:
    """``search_tool``: the free-form search baseline."""

    name = "search_tool"
    description = "last window turns + memory_search(query) over evicted units (BM25 top-k)"
    uses_bookmarks = False

    def prepare(self, conversation: Conversation, settings: MethodSettings) -> SearchConversation:
        """Cut the window and the evicted units."""
        return SearchConversation(conversation, settings, bm25_scorer,
                                  system=INSTRUCTION + SEARCH_HINT)
