"""``CopageMiddleware``: paged memory for LangChain v1 ``create_agent``.

The agent's full message history is kept in a :class:`~copage.PagedMemory`; the
model is sent only the paged view: the messages of resident pages and of the open
page, with the steps of the recall mode (``recall_mode``, the names and the default
of :class:`~copage.session.PagedChat` and the proxy,
:data:`~copage.session.modes.DEFAULT_RECALL_MODE`):

* ``speculative``: the evicted pages best matching the latest human message (BM25,
  the fill of :func:`copage.session.prepare.prepare`, the step of ``PagedChat`` and
  the proxy) are shown in one message just before it, for this model call only: never
  stored as a turn, never returned to the agent's state;
* ``tool``: copage's preamble and the bookmarks of evicted pages in the system
  prompt, and the recall tool. Recall calls are served here, inside the model call,
  like the proxy does: they never reach the agent's tool node or its state. A reply
  that mixes recall calls with the application's tool calls pages the pages in and
  returns only the application's calls.

Without ``tool`` (``speculative``, ``none``) the system prompt gets the short
answer-only preamble, with no bookmarks and no recall tool
(:func:`copage.session.prompts.styled`). The request as sent (fill and the agent's
system prompt included) is what ``stats().prompt_cache`` counts (the one turn
preparation, :func:`copage.session.prepare.prepare`, meters it).

Each model call is one run of the engine's recall loop
(:func:`copage.session.engine.run_recall_loop`, the loop of ``PagedChat`` and the
proxy), the agent's model handler standing for the model
(:class:`~copage.adapters.langchain.caller.HandlerCall`; the sync agent drives the
loop with :func:`copage.session.drive.iterate_sync`). So the cap and the handling
of a recall written as text (``RECALL p3``, ``<tool_call>...``, a reply that is only
``p3``: served like a native call, never kept in the answer) are PagedChat's; with
``stream_mode="messages"`` such text and the recall rounds are held back from the
stream (:mod:`copage.adapters.langchain.stream`). The conversation stays locked in
the store for the model call (recalls included), as the proxy locks it for a turn.

The conversation is the LangGraph thread (``thread_id``) unless a
``conversation_id`` is given; its history lives in copage's store, so it survives
a restart with or without a LangGraph checkpointer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest
from langchain_core.messages import BaseMessage, SystemMessage
from langgraph.runtime import Runtime

from copage.adapters._pool import ConversationPool
from copage.adapters.langchain.caller import HandlerCall, View, engine_messages, filled_view
from copage.adapters.langchain.convert import from_turn
from copage.adapters.langchain.history import same, unstored
from copage.core.config import PagerConfig
from copage.core.dense_rank import DenseRanker
from copage.ids import check_conversation_id
from copage.llm.errors import note_overflow
from copage.llm.model_types import Message
from copage.memory import PagedMemory
from copage.session.drive import in_worker, iterate_sync
from copage.session.engine import LoopEnd, LoopSettings, Refit, run_recall_loop
from copage.session.fill_settings import DEFAULT_DENSE, resolve_dense
from copage.session.modes import DEFAULT_RECALL_MODE, LOOP_MODES, RecallMode, loop_mode
from copage.session.overflow import KnownWindows, fit_known, refit
from copage.session.prepare import prepare
from copage.session.prompts import join_system
from copage.session.speculate import DEFAULT_THRESHOLD, DEFAULT_TOKENS, Filled, Speculator
from copage.stores.protocol import PageStore

ConversationId = str | Callable[[Runtime[Any]], str] | None
RECALL_MODES = LOOP_MODES
"""The recall modes the middleware runs (``PagedChat``'s, without ``choose`` and ``auto``)."""


def middleware_mode(text: str) -> RecallMode:
    """The middleware's :func:`~copage.session.modes.loop_mode` (the proxy's check)."""
    return loop_mode(text, owner="CopageMiddleware")


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
        recall_mode: how evicted pages come back: ``speculative`` (the default, as
            ``PagedChat``'s and the proxy's: the best-matching evicted pages shown
            before the latest human message, no tool), ``tool`` (the recall tool and
            the bookmark list), ``speculative+tool`` or ``none`` (see module docstring).
        speculative_tokens: the speculative fill's allowance per model call (tokens).
        speculative_threshold: minimal normalised BM25 score of the best evicted page
            for a fill (:mod:`copage.session.speculate`).
        dense: the fill's meaning channel, so a question asked in other words than the
            fact still reaches it (docs/dense.md): a ranker (``copage.dense.ranker()``),
            ``"default"`` (the default: on when its model's files are installed, as
            ``FillSettings``'), ``"auto"``/a model folder (required) or None (BM25 only).
        config: paging settings of new conversations, or give them as keywords
            (``boundary="fixed_10"``, ``policy="lru"``, ``resident_pages=5``, ...).
    """

    def __init__(self, store: PageStore | str | None = None, *,
                 conversation_id: ConversationId = None, tenant: str = "default",
                 max_recalls: int = 3, recall_mode: str = DEFAULT_RECALL_MODE,
                 speculative_tokens: int = DEFAULT_TOKENS,
                 speculative_threshold: float = DEFAULT_THRESHOLD,
                 dense: DenseRanker | str | None = DEFAULT_DENSE,
                 config: PagerConfig | None = None, **settings: Any) -> None:
        super().__init__()
        if config is not None and settings:
            raise ValueError("give either config= or individual settings, not both")
        if max_recalls < 0:
            raise ValueError(f"max_recalls must be >= 0, got {max_recalls}")
        self.mode = middleware_mode(recall_mode)
        self.speculator = Speculator(speculative_threshold, tokens=speculative_tokens,
                                     dense=resolve_dense(dense))
        self.pool = ConversationPool(store, config or PagerConfig(**settings))
        self.conversation_id = conversation_id
        self.tenant = tenant
        self.max_recalls = max_recalls
        self.windows = KnownWindows()  # the models' windows, once a refusal has told them
        self.tools = []

    @property
    def recall_mode(self) -> str:
        """The recall mode's canonical name (e.g. ``speculative``)."""
        return self.mode.name

    # ------------------------------------------------------------- memory side
    def memory(self, conversation_id: str) -> PagedMemory:
        """The stored conversation (a fresh copy, for inspection)."""
        return PagedMemory(store=self.pool.store, conversation_id=conversation_id,
                           tenant=self.tenant, create=False)

    def _conversation(self, runtime: Runtime[Any] | None) -> str:
        """The run's conversation id, under the one id rule (:mod:`copage.ids`): the
        proxy, its inspector and MCP can then reach what this agent stored."""
        return check_conversation_id(self._conversation_of(runtime),
                                     what="the conversation id (conversation_id or thread_id)")

    def _conversation_of(self, runtime: Runtime[Any] | None) -> str:
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
        # the state's system messages, joined, are pinned (None: it has none, the stored
        # one stays), as the proxy pins a request's: one that changes each call included
        system = join_system(str(m.text) for m in messages if isinstance(m, SystemMessage))
        with mem.transaction():
            if system is not None and system != mem.system:
                mem.add("system", system)
            for role, text, meta in new:
                if role != "system":
                    mem.add(role, text, **meta)

    @contextmanager
    def _opened(self, cid: str, request: ModelRequest[Any]
                ) -> Iterator[tuple[PagedMemory, HandlerCall]]:
        """The conversation, locked for the block, with the request's messages stored;
        the model call of its view (metered as it is sent: :func:`~copage.session.prepare.prepare`)."""
        with self.pool.use(cid, tenant=self.tenant, create=True) as mem:
            self._ingest(mem, request.messages)
            window = self.windows.get(_model_key(request))
            if window is not None:  # known once the model refused one: page down first
                first = HandlerCall(request, self._view(mem, request.messages,
                                                        request.system_prompt, meter=False))
                fit_known(mem, window, first.messages, first.recall_tools)
            yield mem, HandlerCall(request, self._view(mem, request.messages,
                                                       request.system_prompt))

    def _view(self, mem: PagedMemory, messages: Sequence[BaseMessage],
              system_prompt: str | None, *, meter: bool = True) -> View:
        ctx = mem.context(meter=False)  # the request is metered as sent, by prepare
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
        if len(by_id) < len(want):  # a resent history: its messages stand where the turns do
            at = _positions(mem)
            for t in turns:
                i = at.get(t.id, len(messages))
                if t.id not in by_id and i < len(messages) and same(messages[i], t):
                    by_id[t.id] = messages[i]
        shown: list[Any] = [m if (m := by_id.get(t.id)) is not None else from_turn(t)
                            for t in turns]
        # the one preparation on the engine's form of the view: the mode's prompt (without
        # the tool, the answer-only preamble, no bookmarks), the fill, the meter
        head = ctx.messages[0] if ctx.messages else {}
        sent = engine_messages(str(head["content"]) if head.get("role") == "system" else "",
                               shown)
        prep = prepare(mem, messages=sent, tools=ctx.tools, offer_tool=self.mode.tool,
                       speculator=self.speculator if self.mode.speculative else None,
                       system_prompt=system_prompt or None, meter=meter)
        if prep.fill is not None:  # the "paper" style changes the system message only
            styled_sent = [prep.messages[0], *sent[1:]]
            shown = filled_view(shown, styled_sent, Filled(prep.messages, prep.fill))
        tool = dict(prep.tools[0]) if prep.tools else None
        return View(str(prep.messages[0]["content"]), shown, tool, mem.config.tool_name,
                    prep.fill)

    def _refit(self, mem: PagedMemory, request: ModelRequest[Any], call: HandlerCall
               ) -> Refit:
        """The engine's ``refit``: on a context overflow, the conversation paged down and
        the view made again (:mod:`copage.session.overflow`)."""
        def again(error: BaseException) -> tuple[list[Message], list[dict[str, Any]]] | None:
            if not refit(mem, error, call.messages, call.recall_tools, known=self.windows,
                         model=_model_key(request)):
                return None
            call.take(self._view(mem, request.messages, request.system_prompt, meter=False))
            return call.messages, call.recall_tools
        return again

    def _record(self, cid: str, messages: Sequence[BaseMessage]) -> None:
        with self.pool.use(cid, tenant=self.tenant, create=True) as mem:
            self._ingest(mem, messages)

    def _settings(self) -> LoopSettings:
        # client_tools=(): every call of another tool than recall is the agent's own,
        # ends the loop and is returned (the agent's tools are added by HandlerCall)
        return LoopSettings(max_recalls=self.max_recalls, offer_recall=self.mode.tool,
                            client_tools=())

    # ------------------------------------------------------------ agent hooks
    def wrap_model_call(self, request: ModelRequest[Any],
                        handler: Callable[[ModelRequest[Any]], Any]) -> Any:
        """Send the paged view; serve recall calls until the model answers."""
        cid = self._conversation(request.runtime)
        with self._opened(cid, request) as (mem, call):
            events = run_recall_loop(mem, call.messages, call.recall_tools, self._settings(),
                                     call.sync(handler), refit=self._refit(mem, request, call))
            try:
                ends = [e for e in iterate_sync(events) if isinstance(e, LoopEnd)]
            except Exception as e:
                note_overflow(e)  # the model's own error, with what to do about it
                raise
            return call.result(ends[-1].outcome)

    async def awrap_model_call(self, request: ModelRequest[Any],
                               handler: Callable[[ModelRequest[Any]], Awaitable[Any]]) -> Any:
        """Async :meth:`wrap_model_call` (the store's lock is waited for, the messages
        stored and the view built in a thread of its own:
        :func:`copage.session.drive.in_worker`)."""
        cid = self._conversation(request.runtime)
        async with in_worker(self._opened(cid, request)) as (mem, call):
            try:
                ends = [e async for e in run_recall_loop(
                    mem, call.messages, call.recall_tools, self._settings(),
                    call.async_(handler), refit=self._refit(mem, request, call))
                        if isinstance(e, LoopEnd)]
            except Exception as e:
                note_overflow(e)
                raise
            return call.result(ends[-1].outcome)

    def after_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        """Store the run's last messages (the final answer) before the run ends."""
        self._record(self._conversation(runtime), state["messages"])

    async def aafter_agent(self, state: AgentState[Any], runtime: Runtime[Any]) -> None:
        """Async :meth:`after_agent`."""
        await asyncio.to_thread(self._record, self._conversation(runtime), state["messages"])


def _model_key(request: ModelRequest[Any]) -> str:
    """The request's model, as the windows are known by (its class and model name)."""
    model = request.model
    name = getattr(model, "model_name", None) or getattr(model, "model", None) or ""
    return f"{type(model).__name__}:{name}"


def _positions(mem: PagedMemory) -> dict[str, int]:
    """The visible turns' positions among all turns (by id)."""
    start, at = {}, 0
    for page in mem.pages:
        start[page.id] = at
        at += len(page.turns)
    out = {t.id: start[pid] + j for pid in mem.resident
           for j, t in enumerate(mem.page(pid).turns)}
    out.update((t.id, at + j) for j, t in enumerate(mem.open_turns))
    return out
