"""The search-tool baseline: a free-form ``memory_search(query)`` tool, no bookmarks.

Paper section 4 (inspired by MemGPT, Packer et al. 2023): "model receives a
free-form memory_search tool with no bookmarks; the backend ranks evicted
sessions by BM25 and returns the top-3". The window is the last ``window`` turns,
at most a quarter of the budget (:data:`SEARCH_SHARE`: it is sent in both calls);
evicted units are those with turns before it. Every call's input is billed (the
first call and each call after a search), and the backend returns the matching
units, best first, that fit in what is left of the budget for the next call, so
the probe's billed total stays within it.

LLM-free reference reader: it searches once with the question itself. With the
same backend, its offline coverage is that of ``bm25`` less what the tool call's
own tokens take: by construction. What sets the two apart is the query a model
writes, which only a model run measures.
"""

from __future__ import annotations

import json
from typing import Any

from copage.eval.datasets.probes import Conversation, Probe
from copage.eval.methods.method import (
    INSTRUCTION,
    MethodAnswer,
    MethodPrompt,
    MethodSettings,
    RecallInfo,
    add_parts,
    call_parts,
    does_not_fit,
    message_tokens,
)
from copage.eval.methods.recorder import Recorder
from copage.eval.methods.units import Unit
from copage.eval.methods.window import WindowConversation, bm25_scorer
from copage.llm.chat_messages import assistant_message, tool_message
from copage.llm.model_types import ChatModel, ChatRequest

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


SEARCH_SHARE = 0.25
"""``search_tool``'s recent window stays within this share of the budget: the window is
sent twice (the first call and the answer call, both billed), so this is ``bm25``'s
half of the budget split over its two calls."""

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

    def _room(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
              billed: int = 0) -> int:
        """Tokens a search result may take in the next call: the budget less what the
        probe has billed so far and less the next call without the result (a call
        resends the whole conversation so far, so each round trip costs it again)."""
        result_frame = message_tokens([tool_message("x", "")], [], self.tokenizer)
        return (self.settings.budget - billed
                - message_tokens(messages, tools, self.tokenizer) - result_frame)

    def build(self, probe: Probe) -> MethodPrompt:
        """The prompts of the reference reader's probe: the first call (window, tool,
        question), its one search (query = the question), and the answer call that
        holds the call and its result; both calls are billed."""
        tools = [search_tool_schema()]
        window_ids = frozenset(t.id for t in self.turns[self.start :])
        needed, evicted = self._needed(probe, window_ids)
        first = self._first(probe)
        first_tokens = message_tokens(first, tools, self.tokenizer)
        call = {"id": "ref_1", "type": "function",
                "function": {"name": TOOL_NAME, "arguments": json.dumps({"query": probe.question})}}
        msgs = [*first, {"role": "assistant", "content": None, "tool_calls": [call]}]
        room = self._room(msgs, tools, first_tokens)
        first_parts = self._parts(first_tokens, probe, first, tools)
        if first_tokens > self.settings.budget:  # not even the first call fits: not sent
            return does_not_fit(needed, needed, would_need=first_tokens)
        if room < 0:  # not even an empty result fits after the first call (which was billed)
            return does_not_fit(needed, needed, billed=(first_tokens,), parts=first_parts,
                                would_need=self.settings.budget - room)
        found, text, limit = self.search(probe.question, room)
        msgs.append(tool_message("ref_1", text))
        answer_tokens = message_tokens(msgs, tools, self.tokenizer)
        total = first_tokens + answer_tokens
        if total > self.settings.budget:  # the answer call is refused; the first was billed
            return does_not_fit(needed, needed, billed=(first_tokens,), parts=first_parts,
                                would_need=total)
        parts = add_parts(first_parts, self._parts(answer_tokens, probe, msgs, tools))
        return MethodPrompt(msgs, tools, self._visible(found, self.start), total, needed, evicted,
                            routed=",".join(u.id for u in found) or None, limit=limit,
                            calls=(first_tokens, answer_tokens), parts=parts)

    def _parts(self, total: int, probe: Probe, msgs: list[dict[str, Any]],
               tools: list[dict[str, Any]]) -> dict[str, int]:
        count = self.tokenizer.count
        calls = [m for m in msgs if m.get("tool_calls")]
        results = [m for m in msgs if m.get("role") == "tool"]
        return call_parts(total, {
            "preamble": self.system_tokens, "tool_schema": message_tokens([], tools, self.tokenizer),
            "recent_turns": self.view.tokens(self.start), "question": count(probe.question),
            "tool_calls": message_tokens(calls, [], self.tokenizer),
            "paged_in": message_tokens(results, [], self.tokenizer)})

    async def answer(self, probe: Probe, model: ChatModel) -> MethodAnswer:
        """The tool loop: searches served until an answer or ``max_recalls`` searches."""
        messages: list[dict[str, Any]] = self._first(probe)
        tools = (search_tool_schema(),)
        window_ids = frozenset(t.id for t in self.turns[self.start :])
        needed, evicted = self._needed(probe, window_ids)
        rec = Recorder(model, self.tokenizer, self.settings.budget)
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
                    units, result, _ = self.search(
                        query, max(0, self._room(messages, list(tools), rec.billed)))
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
                                  system=INSTRUCTION + SEARCH_HINT, share=SEARCH_SHARE)


def search_conversation(conversation: Conversation, settings: MethodSettings, start: int,
                        window_label: str) -> SearchConversation:
    """``search_tool`` behind a given window (turns from ``start``; :mod:`.pages`)."""
    return SearchConversation(conversation, settings, bm25_scorer, system=INSTRUCTION + SEARCH_HINT,
                              start=start, window_label=window_label)
