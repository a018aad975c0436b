"""``CopageMiddleware``: paged memory for LangChain v1 ``create_agent``.

The agent's full message history is kept in a :class:`~copage.PagedMemory`; the
model is sent only the paged view (the system prompt with copage's preamble and
the bookmarks of evicted pages, the messages of resident pages and of the open
page) plus the recall tool. Recall calls are served here, inside the model call,
like the proxy does: they never reach the agent's tool node or its state. A
reply that mixes recall calls with the application's tool calls pages the pages
in and returns only the application's calls.

The recall loop follows the one cap rule of :mod:`copage.session.cap` (the
engine's): ``max_recalls`` calls served per model call, then one request with
``tool_choice="none"``, then one without the recall tool, then
:class:`~copage.session.cap.RecallLoopError`. A recall written as text
(``RECALL p3``, ``<tool_call>...``, a reply that is only ``p3``) is found by the
engine's filter (:func:`copage.session.textfilter.filter_text`), served like a
native call and never kept in the answer, nor streamed with
``stream_mode="messages"`` (:mod:`copage.adapters.langchain.stream`).

The conversation is the LangGraph thread (``thread_id``) unless a
``conversation_id`` is given; its history lives in copage's store, so it survives
a restart with or without a LangGraph checkpointer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.messages import ToolCall as LcToolCall
from langgraph.runtime import Runtime

from copage.adapters._pool import ConversationPool
from copage.adapters.langchain.convert import from_turn, without_calls
from copage.adapters.langchain.history import unstored
from copage.adapters.langchain.stream import held_stream
from copage.core.config import PagerConfig
from copage.core.types import ToolCall
from copage.memory import PagedMemory
from copage.session.cap import RecallCap, Verdict
from copage.session.textfilter import filter_text, recall_stub
from copage.stores.base import PageStore

ConversationId = str | Callable[[Runtime[Any]], str] | None


@dataclass(frozen=True, slots=True)
class _View:
    system: str  # copage's system text ("" while no page is evicted)
    messages: list[AnyMessage]
    tool: dict[str, Any] | None  # the recall tool, offered once a page is evicted
    tool_name: str


class CopageMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Keeps the agent's history in copage's paged memory (see module docstring).

    Args:
        store: a :class:`PageStore` or store URL (``sqlite:///chat.db``,
            ``postgresql://...``); in memory when None.
        conversation_id: a fixed id, or a function of the LangGraph runtime; by
            default the run's ``thread_id``.
        tenant: the owner of the conversations in the store.
        max_recalls: recall calls served per model call; later ones are refused and
            the model is asked to answer.
        config: paging settings of new conversations, or give them as keywords
            (``boundary="fixed_10"``, ``policy="lru"``, ``resident_pages=5``, ...).
    """

    def __init__(self, store: PageStore | str | None = None, *,
                 conversation_id: ConversationId = None, tenant: str = "default",
                 max_recalls: int = 3, config: PagerConfig | None = None,
                 **settings: Any) -> None:
        super().__init__()
        if config is not None and settings:
            raise ValueError("give either config= or individual settings, not both")
        if max_recalls < 0:
            raise ValueError(f"max_recalls must be >= 0, got {max_recalls}")
        self.pool = ConversationPool(store, config or PagerConfig(**settings))
        self.conversation_id = conversation_id
        self.tenant = tenant
        self.max_recalls = max_recalls
        self.tools = []

    # ------------------------------------------------------------- memory side
    def memory(self, conversation_id: str) -> PagedMemory:
        """The stored conversation (a fresh copy, for inspection)."""
        return PagedMemory(store=self.pool.store, conversation_id=conversation_id,
                           tenant=self.tenant, create=False)

    def _conversation(self, runtime: Runtime[Any] | None) -> str:
        if isinstance(self.conversation_id, str):
            return self.conversation_id
        if callable(self.conversation_id):
            if runtime is None:
                raise ValueError("conversation_id needs the LangGraph runtime")
            return self.conversation_id(runtime)
        info = getattr(runtime, "execution_info", None)
        thread = getattr(info, "thread_id", None)
        if not thread:
            from langgraph.config import get_config

            try:
                thread = get_config().get("configurable", {}).get("thread_id")
            except RuntimeError:
                thread = None
        if not thread:
            raise ValueError("CopageMiddleware needs a conversation: pass conversation_id=..., "
                             "or run the agent with config={'configurable': {'thread_id': ...}}")
        return str(thread)

    def _ingest(self, mem: PagedMemory, messages: Sequence[BaseMessage]) -> None:
        """Store the messages the memory does not hold yet, as one change."""
        new = unstored(mem, messages)
        if not new:
            return
        with mem.transaction():
            for role, text, meta in new:
                mem.add(role, text, **meta)

    def _prepare(self, cid: str, messages: Sequence[BaseMessage]) -> _View:
        with self.pool.use(cid, tenant=self.tenant, create=True) as mem:
            self._ingest(mem, messages)
            return self._view(mem, messages)

    def _view(self, mem: PagedMemory, messages: Sequence[BaseMessage]) -> _View:
        ctx = mem.context()
        turns = [t for t in mem.visible_turns() if t.role != "system"]
        # the state's own message objects for the visible turns: when the state holds
        # them (a checkpointer) they are its latest messages, so only its tail is looked at
        want = {t.id for t in turns}
        by_id: dict[str, BaseMessage] = {}
        for msg in messages[-(2 * len(want) + 16):][::-1]:
            if len(by_id) == len(want):
                break
            if msg.id in want:
                by_id[msg.id] = msg
        shown = [m if (m := by_id.get(t.id)) is not None else from_turn(t) for t in turns]
        head = ctx.messages[0] if ctx.messages else {}
        system = str(head["content"]) if head.get("role") == "system" else ""
        tool = dict(ctx.tools[0]) if ctx.tools else None
        return _View(system, shown, tool, mem.config.tool_name)  # type: ignore[arg-type]

    def _serve(self, cid: str, loop: _Loop) -> list[ToolMessage]:
        with self.pool.use(cid, tenant=self.tenant, create=True) as mem:
            return [ToolMessage(content=loop.cap.serve(mem, c, loop.allowed)[0],
                                tool_call_id=c.id, name=c.name) for c in loop.pending]

    def _record(self, cid: str, messages: Sequence[BaseMessage]) -> None:
        with self.pool.use(cid, tenant=self.tenant, create=True) as mem:
            self._ingest(mem, messages)

    # ------------------------------------------------------------ agent hooks
    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], Any]) -> Any:
        """Send the paged view; serve recall calls until the model answers."""
        cid = self._conversation(request.runtime)
        loop = _Loop(self.max_recalls, request, self._prepare(cid, request.messages))
        while True:
            with held_stream(loop.name, loop.text_tools) as held:
                response = handler(loop.request())
            done = loop.inspect(response)
            if held is not None:
                held.finish(keep=done)
            outputs = self._serve(cid, loop) if loop.pending else []
            if done:
                return loop.result(response)
            loop.add(response, outputs)

    async def awrap_model_call(self, request: ModelRequest[Any],
                               handler: Callable[[ModelRequest[Any]], Awaitable[Any]]) -> Any:
        """Async :meth:`wrap_model_call` (store work runs in a worker thread)."""
        cid = self._conversation(request.runtime)
        view = await asyncio.to_thread(self._prepare, cid, request.messages)
        loop = _Loop(self.max_recalls, request, view)
        while True:
            with held_stream(loop.name, loop.text_tools) as held:
                response = await handler(loop.request())
            done = loop.inspect(response)
            if held is not None:
                held.finish(keep=done)
            outputs = (await asyncio.to_thread(self._serve, cid, loop)
                       if loop.pending else [])
            if done:
                return loop.result(response)
            loop.add(response, outputs)

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        """Store the run's last messages (the final answer) before the run ends."""
        self._record(self._conversation(runtime), state["messages"])

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        """Async :meth:`after_agent`."""
        await asyncio.to_thread(self._record, self._conversation(runtime), state["messages"])


class _Loop:
    """One model call of the agent driving the one cap rule (:class:`RecallCap`)."""

    def __init__(self, cap: int, request: ModelRequest[Any], view: _View) -> None:
        self.base, self.view = request, view
        self.name = view.tool_name
        self.cap = RecallCap(cap, offered=view.tool is not None)
        self.text_tools = [view.tool] if view.tool is not None else [recall_stub(self.name)]
        self.extra: list[AnyMessage] = []
        self.rnd = self.cap.next_round()
        self.pending: list[ToolCall] = []  # the reply's recall calls, to answer
        self.allowed = False  # whether they are served (else refused)
        self.rest: str | None = None  # the reply's text without call-shaped text
        self.rounds = 0
        parts = [p for p in (request.system_prompt, view.system) if p]
        self.system = SystemMessage(content="\n\n".join(parts)) if parts else None

    def request(self) -> ModelRequest[Any]:
        """The request for the next model call: the paged view, then this turn's recalls."""
        self.rnd = self.cap.next_round()
        tools = list(self.base.tools)
        choice = self.base.tool_choice
        if self.view.tool is not None and self.rnd.offer:
            tools.append(self.view.tool)
            if self.rnd.capped:
                choice = "none"
        return self.base.override(system_message=self.system, tools=tools, tool_choice=choice,
                                  messages=[*self.view.messages, *self.extra])

    def inspect(self, response: Any) -> bool:
        """Sort the reply's calls (into :attr:`pending`); whether the model call ends."""
        self.rounds += 1
        self.pending, self.rest = [], None
        ai = _ai_of(response)
        if ai is None:
            return True
        native = [_call(c) for c in ai.tool_calls if c["name"] == self.name]
        app = [c for c in ai.tool_calls if c["name"] != self.name]
        text = ai.content if isinstance(ai.content, str) else ai.text
        found = filter_text(text, self.text_tools, self.name,
                            bare_id=f"call_bare_{self.rounds}")
        if found.calls:
            self.rest = found.rest.strip()
        calls = native + found.calls
        verdict = self.cap.verdict(self.rnd, calls=bool(calls), said=bool(found.rest.strip()),
                                   client=bool(app))
        self.pending = calls
        self.allowed = self.rnd.allowed and verdict is not Verdict.REFUSE_AND_ANSWER
        return verdict is not Verdict.SERVE

    def add(self, response: Any, outputs: list[ToolMessage]) -> None:
        ai = _ai_of(response)
        assert ai is not None
        calls = [LcToolCall(name=c.name, args=json.loads(c.arguments or "{}"), id=c.id,
                            type="tool_call") for c in self.pending]
        self.extra.extend([AIMessage(content=self.rest if self.rest is not None else ai.content,
                                     tool_calls=calls), *outputs])

    def result(self, response: Any) -> Any:
        return _strip_recalls(response, self.name, self.rest)


def _call(c: LcToolCall) -> ToolCall:
    return ToolCall(str(c.get("id") or ""), c["name"],
                    json.dumps(c.get("args") or {}, ensure_ascii=False))


def _ai_of(response: Any) -> AIMessage | None:
    if isinstance(response, ExtendedModelResponse):
        response = response.model_response
    if isinstance(response, AIMessage):
        return response
    if isinstance(response, ModelResponse):
        return next((m for m in reversed(response.result) if isinstance(m, AIMessage)), None)
    return None


def _strip_recalls(response: Any, name: str, rest: str | None = None) -> Any:
    """``response`` without recall calls (they were served here); with ``rest`` as the
    text of its last AI message when call-shaped text was taken out of it."""
    if isinstance(response, ExtendedModelResponse):
        return ExtendedModelResponse(_strip_recalls(response.model_response, name, rest),
                                     response.command)
    if isinstance(response, AIMessage):
        out = without_calls(response, name)
        return out if rest is None else out.model_copy(update={"content": rest})
    if isinstance(response, ModelResponse):
        last = next((i for i in range(len(response.result) - 1, -1, -1)
                     if isinstance(response.result[i], AIMessage)), None)
        return ModelResponse([_strip_recalls(m, name, rest if i == last else None)
                              if isinstance(m, AIMessage) else m
                              for i, m in enumerate(response.result)],
                             response.structured_response)
    return response
