"""``CopageSession``: an OpenAI Agents SDK ``Session`` over copage's paged memory.

The full history lives in copage's store. :meth:`CopageSession.get_items`
returns the paged view: one system item with copage's preamble and the
bookmarks of evicted pages (when any page is evicted), then the items of the
resident pages and of the open page. Give the agent :meth:`CopageSession.recall_tool`
so the model can bring an evicted page back; the recall calls and their outputs
are not stored (like the proxy, they stay out of the history), and the recalled
page is resident, so shown in full, from the next run on. The tool follows the one
cap rule of :mod:`copage.session.cap`: ``max_recalls`` calls are served per turn
(from one stored user item to the next); later ones are answered with the
engine's refusal, which tells the model to answer with what it has. (The SDK runs
the model loop, so the requests after the cap are its own.)

``pop_item`` removes the last item in one commit (``PagedMemory.pop_turn``): O(1)
when its turn is in the open page; when it closed its page in this session's latest
commit, that commit is taken back (O(pages)). Otherwise (another process added it, a
recall came after it, ...) the conversation is rebuilt without it: the shortened
copy is written under a second id, then the old one is deleted; a process killed in
between leaves both, and the next use keeps the longer (the pop did not happen). So
the stored id then alternates between ``session_id`` and ``session_id + "~pop"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

from agents import FunctionTool, RunConfig, Runner
from agents.items import TResponseInputItem
from agents.memory import SessionSettings
from agents.memory.session_settings import resolve_session_limit
from agents.result import RunResult
from agents.run import CallModelData, ModelInputData
from agents.tool_context import ToolContext

from copage.adapters.agents.items import Item, content_text, items_of, to_turn
from copage.adapters.agents.streamed import PagedStream
from copage.core import prompt
from copage.core.config import PagerConfig
from copage.core.dense_rank import DenseRanker
from copage.core.types import ToolCall, Turn
from copage.ids import MAX_CONVERSATION_ID, check_conversation_id
from copage.llm.errors import note_overflow
from copage.memory import PagedMemory
from copage.session.cap import RecallCap
from copage.session.fill_settings import DEFAULT_DENSE, resolve_dense
from copage.session.opening import Conversations, read
from copage.session.overflow import REFITS, KnownWindows, fit_known, refit
from copage.session.prepare import prepare
from copage.session.speculate import DEFAULT_THRESHOLD, DEFAULT_TOKENS, Speculator
from copage.stores import open_store
from copage.stores.protocol import ConversationNotFound, PageStore

POP_SUFFIX = "~pop"
RECALL_HINT = (" Evicted pages are listed as bookmarks such as [p3: keyword keyword] in the "
               "system message; call it before answering when a detail you need is on one.")


class CopageSession:
    """A ``Session`` whose history is paged by copage (see module docstring).

    Args:
        session_id: the conversation id (within ``tenant``): 1-124 characters of
            :mod:`copage.ids`' rule (the ``~pop`` twin takes the last 4), else a
            ``ValueError``.
        store: a :class:`PageStore` or store URL; in memory when None.
        tenant: the owner of the conversation in the store.
        config: paging settings of a new conversation, or give them as keywords
            (``boundary="fixed_10"``, ``policy="lru"``, ``resident_pages=5``, ...).
        session_settings: the SDK's settings (e.g. ``SessionSettings(limit=...)``).
        max_recalls: recall calls served per turn; later ones are refused.
        speculative_tokens: the speculative fill's allowance per run (tokens), when the
            run is given :meth:`run_config` (or :meth:`fill_filter`).
        speculative_threshold: minimal normalised BM25 score of the best evicted page
            for a fill (:mod:`copage.session.speculate`).
        dense: the fill's meaning channel, so a question asked in other words than the
            fact still reaches it (docs/dense.md): a ranker (``copage.dense.ranker()``),
            ``"default"`` (the default: on when its model's files are installed, as
            ``FillSettings``'), ``"auto"``/a model folder (required) or None (BM25 only).
    """

    def __init__(self, session_id: str, store: PageStore | str | None = None, *,
                 tenant: str = "default", config: PagerConfig | None = None,
                 session_settings: SessionSettings | None = None, max_recalls: int = 3,
                 speculative_tokens: int = DEFAULT_TOKENS,
                 speculative_threshold: float = DEFAULT_THRESHOLD,
                 dense: DenseRanker | str | None = DEFAULT_DENSE, **settings: Any) -> None:
        if config is not None and settings:
            raise ValueError("give either config= or individual settings, not both")
        # the one id rule (copage.ids), with room for the "~pop" twin's suffix
        self.session_id = check_conversation_id(
            session_id, max_len=MAX_CONVERSATION_ID - len(POP_SUFFIX), what="session_id")
        self.session_settings = session_settings
        self.store: PageStore = open_store(store or "memory://") if (
            store is None or isinstance(store, str)) else store
        self.tenant = tenant
        self.config = config or PagerConfig(**settings)
        self._conversations = Conversations(self.store, 4)
        self._recall_calls: set[str] = set()
        self.max_recalls = max_recalls
        self._cap = RecallCap(max_recalls)  # this turn's recalls (a user item starts a turn)
        self.speculator = Speculator(speculative_threshold, tokens=speculative_tokens,
                                     dense=resolve_dense(dense))
        self._filtered = False  # fill_filter has run: it meters each run's request
        self._pending: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None
        self._turn_fill: tuple[str, str | None] | None = None  # (question, fill) of the turn
        self._windows = KnownWindows()  # the model's window, once a refusal told it
        self._sent: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])  # last view
        #: Calls of :meth:`add_items` that stored, in this process (for :meth:`input_again`).
        self.stored_batches = 0

    # ------------------------------------------------------------ the store
    def _current(self) -> str:
        """The stored id (``session_id`` or its ``~pop`` twin); repairs a killed pop."""
        a, b = self.session_id, self.session_id + POP_SUFFIX
        has_a = self.store.exists(a, tenant=self.tenant)
        has_b = self.store.exists(b, tenant=self.tenant)
        if has_a and has_b:  # a pop was interrupted: the longer copy is the real one
            n_a = len(self.store.load(a, tenant=self.tenant).turns)
            n_b = len(self.store.load(b, tenant=self.tenant).turns)
            keep, drop = (a, b) if n_a >= n_b else (b, a)
            self._conversations.delete(self.tenant, drop, locked=True)
            return keep
        return b if has_b else a

    @contextmanager
    def _memory(self, create: bool = True) -> Iterator[PagedMemory | None]:
        """The conversation under the store's lock on ``session_id`` (None if absent),
        opened by the one opener (:mod:`copage.session.opening`): put back in
        the cache only if the block succeeds."""
        with self.store.lock(self.session_id, tenant=self.tenant):
            try:
                mem = self._conversations.open(self.tenant, self._current(),
                                               self._config if create else None).mem
            except ConversationNotFound:
                mem = None
            yield mem
            if mem is not None:
                self._conversations.put(mem)

    def _config(self) -> PagerConfig:
        return self.config

    def memory(self) -> PagedMemory | None:
        """A fresh copy of the stored conversation (for inspection), None if empty."""
        with self._memory(create=False) as mem:
            return None if mem is None else read(self.store, mem.conversation_id,
                                                 tenant=self.tenant)

    # ---------------------------------------------------------- the protocol
    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The paged view: a bookmarks item (when pages are evicted), then the items of
        the resident pages and the open page.

        ``limit`` (else ``session_settings.limit``) bounds the whole answer: at most
        ``limit`` items, the bookmarks item first (when there is one and ``limit`` is
        at least 2), then the latest items of the view.

        The view is counted in ``stats().prompt_cache`` as a request (a run starts from
        it), stored with the conversation at the next ``add_items``.
        """
        return await asyncio.to_thread(self._get_items,
                                       resolve_session_limit(limit, self.session_settings))

    def _get_items(self, limit: int | None) -> list[Any]:
        if limit is not None and limit < 0:
            raise ValueError(f"limit must be >= 0, got {limit}")
        with self._memory(create=False) as mem:
            if mem is None:
                return []
            ctx = mem.context(meter=False)
            window = self._windows.get("")  # known once a refusal told it: page down first
            if window is not None and fit_known(  # (fill_filter's fill is still to come)
                    mem, window, ctx.messages, ctx.tools,
                    extra=self.speculator.tokens if self._filtered else 0):
                ctx = mem.context(meter=False)
            per_turn = [items_of(t) for t in mem.visible_turns()]
            items = [i for its in per_turn for i in its]
            head = [{"role": "system", "content": str(ctx.messages[0]["content"])}
                    ] if mem.evicted else []
            if limit is None:
                view = head + items
            elif limit < 2:
                head, view = [], items[-limit:] if limit else []
            else:
                view = head + items[-(limit - len(head)):]
            if not view:  # limit=0: nothing given, no request to count
                return view
            # every run starts from this view: metered as the SDK is given it (the turns
            # whose items it keeps: context() ends with one message per visible turn), so
            # stats().prompt_cache counts each run, evicted or not
            kept, n = 0, len(view) - len(head)
            for its in reversed(per_turn):
                if n < len(its):
                    break
                kept, n = kept + 1, n - len(its)
            msgs = ctx.messages
            sent = ([msgs[0]] if head else []) + (msgs[-kept:] if kept else [])
            self._sent = (sent, [dict(t) for t in ctx.tools])
            if self._filtered:  # metered with the run's fill by fill_filter
                self._pending = (sent, [dict(t) for t in ctx.tools])
            else:  # the one turn preparation, as the view is given ("paper": unchanged)
                prepare(mem, messages=sent, tools=ctx.tools)
        return view

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Store new items (one atomic change); recall calls and outputs are skipped."""
        await asyncio.to_thread(self._add_items, [dict(i) for i in items])
        self.stored_batches += 1

    def _add_items(self, items: list[Item]) -> None:
        name = self.config.tool_name
        turns, before = [], []
        for item in items:
            kind = item.get("type")
            if kind == "reasoning":
                before.append(item)
                continue
            if kind == "function_call" and item.get("name") == name:
                self._recall_calls.add(str(item.get("call_id")))
                before = []  # the reasoning behind a recall goes with it
                continue
            if kind == "function_call_output" and item.get("call_id") in self._recall_calls:
                continue
            if kind in (None, "message") and item.get("role") == "user":
                self._cap = RecallCap(self.max_recalls)
                self._turn_fill = None
            turns.append(to_turn(item, before))
            before = []
        if before:
            turns.append(to_turn(before[-1], before[:-1]))
        if not turns:
            return
        with self._memory() as mem:
            assert mem is not None
            with mem.transaction():
                for role, text, meta in turns:
                    mem.add(role, text, **meta)

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the latest item (see the module docstring for the cost)."""
        return await asyncio.to_thread(self._pop_item)

    def _pop_item(self) -> Any:
        conversations = self._conversations
        with self.store.lock(self.session_id, tenant=self.tenant):
            try:
                mem = conversations.open(self.tenant, self._current()).mem
            except ConversationNotFound:
                return None
            last = mem.last_turn
            if last is None:
                conversations.put(mem)
                return None
            popped = mem.pop_turn()  # the latest turn is in the open page: one O(1) commit
            if popped is not None:
                conversations.put(mem)
                return items_of(popped)[-1]
            turns, cid = mem.turns, mem.conversation_id
            twin = self.session_id if cid != self.session_id else self.session_id + POP_SUFFIX
            # The shortened copy is complete before the original goes (see module docstring).
            copy = conversations.open(self.tenant, twin, lambda: mem.config).mem
            with copy.transaction():
                if mem.system:
                    copy.add("system", mem.system)
                for t in turns[:-1]:
                    copy.add(t.role, t.text, **_meta(t))
            conversations.delete(self.tenant, cid, locked=True)
            conversations.put(copy)
        return items_of(last)[-1]

    async def clear_session(self) -> None:
        """Delete the stored conversation."""
        await asyncio.to_thread(self._clear)

    def _clear(self) -> None:
        with self.store.lock(self.session_id, tenant=self.tenant):
            for cid in (self.session_id, self.session_id + POP_SUFFIX):
                with suppress(ConversationNotFound):  # the cached copy goes all the same
                    self._conversations.delete(self.tenant, cid, locked=True)

    # ------------------------------------------------- a window smaller than the budget
    async def run(self, agent: Any, input: str | list[TResponseInputItem],
                  **kwargs: Any) -> RunResult:
        """``Runner.run(agent, input, session=self, **kwargs)``, paged down when the model
        refuses the run's request for its window (as PagedChat, the proxy and the
        LangChain middleware do; :mod:`copage.session.overflow`): the conversation is
        paged down to about half the window and the run is made again, at most
        ``REFITS`` times, on what the refused run stored (the SDK stores the input
        before it calls the model; else the input is given again). The window is
        remembered: later views that would not fit it are paged down by
        :meth:`get_items` before any run is refused. A run refused after the agent's own
        tools ran may run them again."""
        given, before = input, self.stored_batches
        for attempt in range(REFITS + 1):
            try:
                return await Runner.run(agent, given, session=self, **kwargs)
            except Exception as e:
                if attempt == REFITS or not await self.page_down(e):
                    note_overflow(e)  # the SDK's own error, with what to do about it
                    raise
                given = self.input_again(given, before)
        raise AssertionError("unreachable")

    def run_sync(self, agent: Any, input: str | list[TResponseInputItem],
                 **kwargs: Any) -> RunResult:
        """:meth:`run` for code without an event loop: ``Runner.run_sync``, paged down and
        run again the same way when the model refuses the request for its window."""
        given, before = input, self.stored_batches
        for attempt in range(REFITS + 1):
            try:
                return Runner.run_sync(agent, given, session=self, **kwargs)
            except Exception as e:
                if attempt == REFITS or not self._page_down(e):
                    note_overflow(e)
                    raise
                given = self.input_again(given, before)
        raise AssertionError("unreachable")

    def run_streamed(self, agent: Any, input: str | list[TResponseInputItem],
                     **kwargs: Any) -> PagedStream:
        """``Runner.run_streamed(agent, input, session=self, **kwargs)``, paged down and run
        again the same way when the model refuses the request for its window: iterate
        the result's ``stream_events()`` as the SDK's; its other attributes
        (``final_output``, ``new_items``, ...) are those of the last attempt
        (:class:`copage.adapters.agents.streamed.PagedStream`)."""
        return PagedStream(self, agent, input, kwargs)

    def input_again(self, given: str | list[TResponseInputItem],
                    before: int) -> str | list[TResponseInputItem]:
        """The input of a run made again after a refusal: none when the SDK stored the
        input (it does before it calls the model, so it is in the history already;
        ``before`` is :attr:`stored_batches` when the first attempt began), else
        ``given`` again."""
        return [] if self.stored_batches > before else given

    async def page_down(self, error: BaseException) -> bool:
        """After a run failed with ``error``: if the model refused its request for its
        context window, page the conversation down to about half of it (and remember
        the window for later views); whether any page was evicted (False: not a
        context overflow, or nothing left to evict)."""
        return await asyncio.to_thread(self._page_down, error)

    def _page_down(self, error: BaseException) -> bool:
        with self._memory(create=False) as mem:
            if mem is None or not refit(mem, error, *self._sent, known=self._windows):
                return False
        self._turn_fill = None  # planned again on what is evicted now
        return True

    # ------------------------------------------------------- the speculative fill
    def run_config(self, **settings: Any) -> RunConfig:
        """A ``RunConfig`` (``settings`` are its other fields) whose
        ``call_model_input_filter`` is :meth:`fill_filter`: give it to ``Runner.run``
        for the speculative fill."""
        return RunConfig(call_model_input_filter=self.fill_filter, **settings)

    async def fill_filter(self, data: CallModelData[Any]) -> ModelInputData:
        """The speculative step of PagedChat, the proxy and the LangChain middleware
        (the fill of :func:`copage.session.prepare.prepare`), as the SDK's
        ``call_model_input_filter``: the evicted pages best matching the latest user
        item, within ``speculative_tokens``, shown in one user item just before it.
        Planned once per turn (recorded as a ``speculative`` event) and shown on every
        model call of the run; never stored. The run's request is metered with it."""
        return await asyncio.to_thread(self._fill, data.model_data)

    def _fill(self, data: ModelInputData) -> ModelInputData:
        items = list(data.input)
        at = next((i for i in range(len(items) - 1, -1, -1)
                   if isinstance(items[i], dict) and items[i].get("role") == "user"
                   and items[i].get("type", "message") == "message"), None)
        if at is None:
            return data
        question = content_text(items[at].get("content"))
        self._filtered = True
        if self._turn_fill is None or self._turn_fill[0] != question:
            with self._memory(create=False) as mem:
                if mem is None:
                    return data
                # the one turn preparation: the fill for the question and, with this
                # run's view (get_items), the meter of the request as sent, fill included
                view, self._pending = self._pending, None
                messages, tools = view if view is not None else ([], [])
                prep = prepare(mem, messages=[*messages, {"role": "user", "content": question}],
                               tools=tools, speculator=self.speculator, fill_for=question,
                               meter=view is not None)
                spec = prep.fill
                self._turn_fill = (question, spec.text if spec and spec.paged_in else None)
        fill = self._turn_fill[1]
        if fill is None:
            return data
        items.insert(at, {"role": "user", "content": fill})
        return ModelInputData(input=items, instructions=data.instructions)

    # ------------------------------------------------------------ the tool
    def recall_tool(self) -> FunctionTool:
        """The recall tool to give the agent (served by this session's memory). It is
        offered to the model only while a page is evicted (the SDK's ``is_enabled``), so
        a conversation that is not paged goes out without it, as everywhere in copage."""
        spec = prompt.recall_tool(self.config.tool_name, by_query=self.config.recall_by_query)
        fn = spec["function"]

        async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
            call = ToolCall(str(getattr(ctx, "tool_call_id", "") or ""), fn["name"], arguments)
            return await asyncio.to_thread(self._recall, call)

        async def enabled(ctx: Any, agent: Any) -> bool:
            return await asyncio.to_thread(self._paged)

        return FunctionTool(name=fn["name"], description=fn["description"] + RECALL_HINT,
                            params_json_schema=fn["parameters"], on_invoke_tool=invoke,
                            strict_json_schema=False, is_enabled=enabled)

    def _paged(self) -> bool:
        with self._memory(create=False) as mem:
            return mem is not None and bool(mem.evicted)

    def _recall(self, call: ToolCall) -> str:
        self._recall_calls.add(call.id)
        with self._memory() as mem:
            assert mem is not None
            return self._cap.serve(mem, call)[0]


def _meta(turn: Turn) -> dict[str, Any]:
    """The ``add`` keywords that rebuild a stored turn."""
    meta = dict(turn.meta)
    meta["id"] = turn.id
    if turn.tool_calls:
        meta["tool_calls"] = list(turn.tool_calls)
    if turn.tool_call_id:
        meta["tool_call_id"] = turn.tool_call_id
    for key in ("speaker", "timestamp", "session"):
        if getattr(turn, key) is not None:
            meta[key] = getattr(turn, key)
    return meta
