"""One chat turn through the proxy: find the conversation, lock it, page, loop, commit.

A turn is opened (:meth:`ProxyService.open_turn`), run, then committed or
abandoned. Opening finds the conversation (see :mod:`copage.server.finder`),
takes its locks, loads it and adds the request's new messages inside a deferred
transaction; committing adds the answer, commits, updates the lookup aids and
unlocks. Everything between (the upstream calls, the answer's deltas streamed to
the client as they come) runs with the conversation locked, and a turn that
ends in any other way (an error, a cancelled task, a client that went away
mid-stream) is rolled back: the stored conversation stays as it was before the
turn, nothing of it is stored, and the client's retry runs the turn again.
:meth:`ProxyService.turn` is the whole turn as events, streamed or consumed
whole (:meth:`ProxyService.chat`): one path for both kinds of response.

Store work is synchronous, so it runs in a thread pool (prepare: load + add the
new messages; finish: add the answer + commit + unlock). With a local store
(memory, SQLite), a cached conversation and a request whose new part is small
and recognised without reading the whole history, both steps run inline on the
event loop instead (well under a millisecond each), saving two thread hops per
turn. Work that grows with the history (validating or hashing every message of
a request that could not be recognised cheaply, loading a conversation, storing
a large first request) always runs in the pool, never on the event loop.

This module orchestrates; the mechanisms live beside it, each once:
:mod:`copage.server.locking` (this worker's queue and the store's lock, one
deadline, the 409 ``conversation_busy``), :mod:`copage.server.recognise` (this
worker's memory of recent requests), :mod:`copage.server.finder` (which
conversation a request belongs to, before the lock: the one finder, also of a
``previous_response_id``), :mod:`copage.server.plan`
(what the request adds to its locked conversation: new messages, a retry, a
regenerate) and :mod:`copage.server.commit` (committing or rolling back a turn,
the lookup aids, the turn's stats). Conversations are opened by the one opener
of every front end, :class:`~copage.session.opening.Conversations` (a
per-worker cache caught up through ``PagedMemory.refresh`` when another worker
wrote, else load, else create); the proxy adds its own rules through its
``create`` hook (validate the first request, or ``Stale`` when it expected an
existing conversation) and deletes a conversation its failed turn created.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager
from dataclasses import replace
from typing import Any, TypeVar

from copage.core.config import PagerConfig
from copage.core.dense_rank import DenseRanker
from copage.llm.errors import BadResponse
from copage.memory import PagedMemory, new_conversation_id
from copage.server.body import Known
from copage.server.commit import Committer, Prep
from copage.server.dense_warm import proxy_ranker, warm
from copage.server.error_body import ProxyError
from copage.server.events import Finished, Opened, TurnEvent, TurnResult
from copage.server.finder import Finder
from copage.server.locking import LOCK_TIMEOUT, Locks, is_local, shielded
from copage.server.metrics import Metrics
from copage.server.plan import (
    SMALL,
    At,
    Fork,
    Hint,
    Stale,
    check_new,
    head_of,
    hint_of,
    last_rq,
    system_change,
)
from copage.server.plan import plan as plan_turn
from copage.server.proxy_loop import (
    UPSTREAM,
    Outcome,
    closing,
    loop_events,
    outcome_of,
    replay_events,
)
from copage.server.recognise import Ask, Guess, Recent
from copage.server.request import ChatCall, Message
from copage.server.transcript import TranscriptIndex, link
from copage.server.upstream import Upstream
from copage.server.upstream import calls as upstream_calls
from copage.session import trace
from copage.session.engine import LoopEnd
from copage.session.memcache import DEFAULT_SIZE
from copage.session.modes import DEFAULT_RECALL_MODE, proxy_mode
from copage.session.opening import Conversations
from copage.session.speculate import DEFAULT_TOKENS, Speculator
from copage.stores.protocol import PageStore

__all__ = ["ALT_TOOL_NAME", "LOCK_TIMEOUT", "SMALL", "Finished", "OpenTurn", "Opened",
           "ProxyService", "TurnEvent", "TurnResult"]

T = TypeVar("T")
ALT_TOOL_NAME = "copage_recall"
log = logging.getLogger("copage.server")


class OpenTurn:
    """A turn whose conversation is locked and whose new messages are added (uncommitted).

    Run the model on :attr:`mem` (unless :attr:`replay` already holds the answer of
    a retried request), then :meth:`commit` the outcome. Leaving the
    :meth:`ProxyService.open_turn` block without committing rolls the turn back.
    """

    def __init__(self, service: ProxyService, tenant: str, cid: str, call: ChatCall,
                 ask: Ask, prep: Prep) -> None:
        self.service, self.tenant, self.conversation_id = service, tenant, cid
        self.call, self.ask, self.prep = call, ask, prep
        self.done = False

    @property
    def mem(self) -> PagedMemory:
        return self.prep.mem

    @property
    def replay(self) -> Outcome | None:
        """The stored answer when the request is a retry of the last turn (no model call)."""
        return self.prep.replay

    async def commit(self, out: Outcome) -> TurnResult:
        """Store the answer and unlock; the turn is acknowledged once this returns."""
        svc = self.service
        self.done = True
        if self.prep.replay is not None:
            svc.commits.release_replay(self.tenant, self.prep)
            svc.metrics.inc("copage_retries_replayed_total")
            return TurnResult(self.conversation_id, out,
                              {**svc.commits.stats_now(self.prep), "replayed": True})
        if svc.inline and self._inline_ok():
            after = svc.commits.finish(self.tenant, self.conversation_id, self.prep, out,
                                       self.call, self.ask)
        else:
            after = await shielded(svc.run(svc.commits.finish, self.tenant,
                                            self.conversation_id, self.prep, out, self.call,
                                            self.ask))
        return TurnResult(self.conversation_id, out, svc.commits.stats(self.prep, out, after))

    def _inline_ok(self) -> bool:
        return len(self.prep.new) <= SMALL


class ProxyService:
    """Runs chat turns for tenants (see module docstring)."""

    def __init__(
        self, *, store: PageStore, index: TranscriptIndex, upstream: Upstream,
        paging: PagerConfig, metrics: Metrics, executor: Executor, max_recalls: int = 3,
        cache_size: int = DEFAULT_SIZE, lock_timeout: float = LOCK_TIMEOUT,
        idempotency_window: float = 600.0, clock: Callable[[], float] = time.time,
        recall_mode: str = DEFAULT_RECALL_MODE, speculative_tokens: int = DEFAULT_TOKENS,
        dense: DenseRanker | None = None) -> None:
        #: The recall steps of every turn, as PagedChat's ``recall_mode`` (no ``choose``).
        self.mode = proxy_mode(recall_mode)
        self.speculator = Speculator(tokens=speculative_tokens, dense=proxy_ranker(dense))
        self.store, self.index, self.upstream = store, index, upstream
        self.paging, self.metrics, self.executor = paging, metrics, executor
        self.max_recalls, self.lock_timeout = max_recalls, lock_timeout
        self.idempotency_window, self.clock = idempotency_window, clock
        #: The one opener (lock held by this service): cache, load or create.
        self.conversations = Conversations(store, cache_size)
        self.cache = self.conversations.cache
        self.recent = Recent(self.cache.size)
        #: ``try_lock`` on a local store is a non-blocking flock or mutex: run it inline.
        self.local = is_local(store, index)
        #: Store work runs on the event loop (no thread hops) when it is local and
        #: quick: a cached or new conversation (else the thread pool).
        self.inline = self.local and self.cache.size > 0
        self.locks = Locks(store, executor, metrics, local=self.local)
        #: This process's queue per conversation (the same dict as ``locks.queues``).
        self._locks = self.locks.queues
        self.commits = Committer(store, self.index, self.cache, self.recent, metrics, clock)
        #: Which conversation a request belongs to (transparent, ``previous_response_id``).
        self.finder = Finder(store, index, self.locks, self.run, idempotency_window)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` in the store's thread pool (work that must not block the event loop)."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    # ------------------------------------------------------------------ turns
    def known(self, tenant: str, conversation_id: str | None, text: str) -> dict[Known, str]:
        """The earlier requests' prefixes a body may continue, and their conversations
        (see :mod:`copage.server.body`): the named conversation's, or, without a name,
        those of this worker's recent conversations that start like ``text``."""
        if conversation_id is not None:
            seen = self.recent.get(tenant, conversation_id)
            return {seen.known: conversation_id} if seen is not None else {}
        return self.recent.candidates(tenant, text)

    async def chat(self, tenant: str, call: ChatCall, conversation_id: str | None,
                   ask: Ask | None = None, *, small: bool = True, via: str | None = None,
                   upstream_key: str | None = None, at: At | None = None) -> TurnResult:
        """One turn, not streamed: :meth:`turn` consumed whole.

        ``conversation_id`` comes from the header (None: recognised from the messages);
        ``small`` is False for a large request (its store work then runs in the pool);
        ``via`` names the conversation whose last request's prefix the body continued;
        ``upstream_key``: the key the upstream is called with (None: the proxy's own).
        """
        async with closing(self.turn(tenant, call, conversation_id, ask, small=small,
                                      via=via, upstream_key=upstream_key, at=at)) as events:
            async for event in events:
                if isinstance(event, Finished):
                    return event.result
        raise RuntimeError("unreachable: a turn ends with Finished or an error")

    async def turn(self, tenant: str, call: ChatCall, conversation_id: str | None,
                   ask: Ask | None = None, *, small: bool = True, via: str | None = None,
                   stream: bool = False, upstream_key: str | None = None,
                   at: At | None = None) -> AsyncIterator[TurnEvent]:
        """One turn as events: :class:`Opened`, the answer's deltas as the engine yields
        them (:func:`copage.server.proxy_loop.loop_events`), then :class:`Finished` once the
        turn is committed. The same events make the streamed and the whole response;
        ``stream`` only chooses how each upstream call is made (streamed, or one reply).

        Closing the generator (or cancelling its task) before :class:`Finished` rolls
        the turn back (see :meth:`open_turn`). Errors are raised (nothing is stored).
        ``at`` (header mode) is the request's claim about the conversation's head,
        checked under its lock (see :data:`copage.server.plan.At`).
        """
        t0 = trace.now_ns()
        async with self.open_turn(tenant, call, conversation_id, ask, small=small,
                                  via=via, at=at) as turn:
            tr = trace.turn(turn.conversation_id, tenant=tenant, front_end="proxy",
                            recall_mode=self.mode.name, start_ns=t0)
            try:
                async for event in self._traced_turn(turn, call, stream, tr, upstream_key):
                    yield event
            except BaseException as e:
                tr.end(stored=False, error=e if isinstance(e, Exception) else None)
                raise

    async def _traced_turn(self, turn: OpenTurn, call: ChatCall, stream: bool,
                           tr: trace.TurnTrace, upstream_key: str | None = None,
                           ) -> AsyncIterator[TurnEvent]:
        """The body of :meth:`turn`, reporting its steps to the turn's trace."""
        if tr.enabled and turn.prep.evicted is not None:
            tr.evictions(turn.prep.evicted, turn.mem.evicted, tr.start_ns, cause="request")
        if turn.replay is not None:
            last = last_rq(turn.mem) or {}
            yield Opened(turn.conversation_id, turn.replay.model or call.model or "", True,
                         str(last.get("prev") or ""))
            for delta in replay_events(turn.replay):
                yield delta
            result = await turn.commit(turn.replay)
            tr.set(replayed=True)
            tr.end(stored=False)
            yield Finished(result)
            return
        if self.speculator.dense is not None and self.mode.speculative and turn.mem.evicted:
            await warm(self.run, self.speculator.dense, turn.mem.passages)  # off the loop, bounded
        model = self.upstream.model_for(call.model, upstream_key)
        yield Opened(turn.conversation_id, model.name, False, turn.prep.head)
        latencies: list[float] = []
        out: Outcome | None = None
        try:
            async with closing(loop_events(turn.mem, model, call,
                                            upstream_calls(self.upstream, stream, latencies,
                                                           self.metrics),
                                            max_recalls=self.max_recalls, mode=self.mode,
                                            speculator=self.speculator, trace=tr,
                                            windows=self.upstream.windows)) as events:
                async for event in events:
                    if isinstance(event, LoopEnd):
                        out = outcome_of(event, model, latencies)
                        break
                    yield event
        except Exception as e:
            self.metrics.inc("copage_upstream_errors_total", kind=type(e).__name__)
            raise
        if out is None:
            raise BadResponse(UPSTREAM, "the recall loop ended without an outcome")
        before, t1 = (turn.mem.evicted, trace.now_ns()) if tr.enabled else ([], 0)
        turn.prep.trace_id = tr.trace_id
        result = await turn.commit(out)
        if tr.enabled:
            tr.evictions(before, turn.mem.evicted, t1, cause="answer")
            tr.set(**{"turn.evicted_pages": int(result.stats.get("evicted_pages") or 0),
                      "turn.recalls": len(out.recalls)})
            result.stats["trace_id"] = tr.trace_id
        tr.end(stored=True)
        yield Finished(result)

    @asynccontextmanager
    async def open_turn(self, tenant: str, call: ChatCall, conversation_id: str | None,
                        ask: Ask | None = None, *, small: bool = True, via: str | None = None,
                        at: At | None = None) -> AsyncIterator[OpenTurn]:
        """Find, lock and prepare the turn's conversation; roll back unless committed.

        The block may run the model as a stream (see module docstring): a task
        cancelled inside it (a client that disconnected) leaves the stored
        conversation as it was before the turn.
        """
        ask = ask or Ask(now=self.clock())
        if ask.now == 0.0:
            ask = replace(ask, now=self.clock())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.lock_timeout
        header = conversation_id is not None
        guess: Guess | None = None
        hint: Hint | None = None
        if not header:
            guess = self.recent.locate(tenant, call.raw, via, call.who)
        else:
            assert conversation_id is not None
            hint = hint_of(self.recent, tenant, conversation_id, call)
        override: tuple[Message, ...] | None = None
        held = AsyncExitStack()
        for attempt in range(4):
            if header and override is None:
                assert conversation_id is not None
                cid = conversation_id
            else:
                if guess is None:
                    guess = (Guess("new") if attempt >= 3 or override is not None
                             else await self.finder.transparent(tenant, call))
                    if (guess.kind == "new" and override is None and attempt < 3
                            and await self.finder.hold_pending(held, tenant, call, ask, guess,
                                                         deadline)):
                        try:  # an identical request may have committed since the look
                            guess = await self.finder.look_again(tenant, guess)
                        except BaseException:
                            await held.aclose()
                            raise
                cid = guess.conversation_id or new_conversation_id()
            cheap = override is None and self._cheap(call, guess, hint, small)
            async with AsyncExitStack() as stack:
                stack.push_async_exit(held.pop_all())  # a first turn's pending lock, if held
                await stack.enter_async_context(self.locks.guard((tenant, cid), deadline))
                lock = await self.locks.acquire(tenant, cid, deadline)
                try:
                    prep = await self._prepare(lock, tenant, cid, call, ask, guess, override,
                                               cheap, hint, at)
                except Stale:
                    if guess is not None and guess.fast:
                        self.recent.discard(tenant, guess.conversation_id)
                    guess = None
                    continue
                except Fork as fork:
                    override, guess = fork.messages, Guess("new")
                    if override is None:
                        header = False  # transparent: a new conversation with every message
                    continue
                turn = OpenTurn(self, tenant, cid, call, ask, prep)
                try:
                    yield turn
                finally:
                    if not turn.done:
                        turn.done = True
                        if prep.replay is not None:
                            self.commits.release_replay(tenant, prep)
                        else:
                            await shielded(self.run(self.commits.abort, prep))
                return
        raise RuntimeError("unreachable: the last attempt starts a new conversation")

    def _cheap(self, call: ChatCall, guess: Guess | None, hint: Hint | None,
               small: bool) -> bool:
        """Whether preparing this turn is cheap enough for the event loop."""
        if not small:
            return False
        if guess is not None:
            return guess.fast or (guess.kind == "new" and len(call.raw) <= SMALL)
        return len(call.raw) <= SMALL or hint is not None

    async def _prepare(self, lock: AbstractContextManager[Any], tenant: str, cid: str,
                       call: ChatCall, ask: Ask, guess: Guess | None,
                       override: tuple[Message, ...] | None, cheap: bool,
                       hint: Hint | None = None, at: At | None = None) -> Prep:
        args = (lock, tenant, cid, call, ask, guess, override, hint, at)
        if self.inline and cheap:
            prep = self._prepare_inline(*args)
            if prep is not None:
                return prep
        fut = asyncio.get_running_loop().run_in_executor(
            self.executor, self._prepare_locked, *args)
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            fut.add_done_callback(self._abort_later)
            raise

    def _abort_later(self, fut: asyncio.Future[Prep]) -> None:
        if not fut.cancelled() and fut.exception() is None:
            prep = fut.result()
            if prep.replay is not None:
                self.executor.submit(self.commits.release_replay, prep.mem.tenant, prep)
            else:
                self.executor.submit(self.commits.abort, prep)

    # ------------------------------------------- store (thread pool or inline)
    def _prepare_inline(self, lock: AbstractContextManager[Any], tenant: str, cid: str,
                        call: ChatCall, ask: Ask, guess: Guess | None,
                        override: tuple[Message, ...] | None, hint: Hint | None,
                        at: At | None = None) -> Prep | None:
        """Fast path on the event loop: conversation cached or new (None: use the pool)."""
        # A cold load (O(turns)) goes to the thread pool instead.
        try:
            cold = not self.conversations.warm(tenant, cid)
        except BaseException:
            lock.__exit__(None, None, None)
            raise
        if cold:
            return None
        return self._prepare_locked(lock, tenant, cid, call, ask, guess, override, hint, at)

    def _prepare_locked(
        self, lock: AbstractContextManager[Any], tenant: str, cid: str, call: ChatCall,
        ask: Ask, guess: Guess | None, override: tuple[Message, ...] | None,
        hint: Hint | None = None, at: At | None = None,
    ) -> Prep:
        """Load (or create) the conversation and add the new messages; ``lock`` is held.

        On failure the lock is released (and a conversation created here deleted).
        """
        created = False
        tx: AbstractContextManager[PagedMemory] | None = None
        mem: PagedMemory | None = None
        def create() -> PagerConfig:
            if guess is not None and guess.kind != "new":
                raise Stale(cid)  # the guessed conversation is gone
            if at is not None and override is None:
                at(None)  # the named answer's conversation is gone: the caller's error
            # Validate before creating: a rejected request must leave no row behind.
            first = override if override is not None else call.messages
            config = self._config_for(call)
            check_new(first, config.tool_name, call)
            return config

        try:
            opened = self.conversations.open(tenant, cid, create)
            mem, created = opened.mem, opened.created
            if at is not None and override is None:
                # Checked here, under the lock: requests continuing one answer at the
                # same time all saw it as the latest; all but the first must branch.
                branch = at(mem)
                if branch is not None:
                    raise Fork(branch)
            plan = plan_turn(mem, tenant, cid, call, ask, guess, override, hint,
                             recent=self.recent, window=self.idempotency_window)
            if isinstance(plan, Outcome):
                return Prep(mem, None, lock, created, head_of(mem), {}, {}, replay=plan)
            new, h = plan
            check_new(new, mem.config.tool_name, call)
            system = system_change(mem, call, new, override)
            before = mem.stats().to_dict()
            evicted = tuple(mem.evicted) if trace.active() else None  # for the turn's span
            tx = mem.transaction()
            tx.__enter__()
            if system is not None:  # the request's system messages, joined, are pinned
                mem.add("system", system)
            for m in new:
                if m.role != "system":  # (system messages leave the chain as it is)
                    h = link(h, m)
                    mem.add(m.role, m.text, tool_calls=list(m.tool_calls),
                            tool_call_id=m.tool_call_id, h=h)
            return Prep(mem, tx, lock, created, h, before, mem.stats().to_dict(), new,
                         call.raw if override is None else (), evicted=evicted)
        except BaseException as e:
            keep = isinstance(e, (Stale, Fork, ProxyError)) and tx is None and not created
            try:
                if tx is not None:  # drop the pending changes, reload as stored
                    tx.__exit__(type(e), e, e.__traceback__)
                elif keep and mem is not None:
                    self.conversations.put(mem)  # untouched: stays warm
            finally:
                self.commits.release(lock, tenant, cid, created)
            raise

    def _config_for(self, call: ChatCall) -> PagerConfig:
        if self.paging.tool_name in call.tool_names:
            return replace(self.paging, tool_name=ALT_TOOL_NAME)
        return self.paging

    # ------------------------------------------------------------------ deleting
    async def delete(self, tenant: str, conversation_id: str) -> None:
        """Delete a conversation of ``tenant`` from the store and this worker's caches,
        under its locks (a turn running on it finishes first). Raises
        ``ConversationNotFound`` when the tenant has no such conversation."""
        key = (tenant, conversation_id)
        deadline = asyncio.get_running_loop().time() + self.lock_timeout
        async with self.locks.guard(key, deadline):
            lock = await self.locks.acquire(tenant, conversation_id, deadline)

            def work() -> None:
                try:
                    self.recent.discard(tenant, conversation_id)
                    self.conversations.delete(tenant, conversation_id, locked=True)
                finally:
                    lock.__exit__(None, None, None)

            await shielded(self.run(work))

