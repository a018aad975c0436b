"""One chat turn through the proxy: find the conversation, lock it, page, loop, commit.

A turn is opened (:meth:`ProxyService.open_turn`), run, then committed or
abandoned. Opening finds the conversation (see :mod:`copage.server.recognise`),
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

The lock is taken with ``try_lock`` polled from the event loop with backoff, never
by a pool thread waiting on it: two workers whose pools were full of threads
waiting on each other's locks would deadlock. An asyncio lock per conversation
keeps waiting requests of this process from polling the store. Both waits share
one deadline: a request that cannot get the conversation within ``lock_timeout``
seconds gets a 409 ``conversation_busy``. Open conversations are kept in a
per-worker :class:`~copage.session.memcache.MemoryCache` and reloaded only when
the stored version moved on (another worker wrote). Once a turn is committed, the
transcript index and the caches are updated best-effort: the turn is acknowledged
even if they fail (a lost head only means a transparent client's next request
starts a new conversation).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import Executor
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from copage.core.config import PagerConfig
from copage.core.types import ToolCall
from copage.llm.errors import BadResponse
from copage.llm.types import ChatModel, ChatRequest, StreamEvent, events_of
from copage.memory import PagedMemory, new_conversation_id
from copage.server.body import Known, Messages
from copage.server.errors import ProxyError, bad_request
from copage.server.loop import (
    UPSTREAM,
    Outcome,
    Stream,
    closing,
    loop_events,
    outcome_of,
    replay_events,
)
from copage.server.metrics import Metrics
from copage.server.recognise import (
    RQ,
    Ask,
    Guess,
    Recent,
    Seen,
    answer_of,
    continues,
    is_retry,
    last_assistant,
    repeats,
    request_info,
)
from copage.server.request import ChatCall, Message
from copage.server.transcript import GENESIS, TranscriptIndex, chain, digest, link
from copage.server.upstream import Upstream
from copage.session.engine import ClientToolDelta, LoopEnd, RecallServed, TextDelta
from copage.session.memcache import DEFAULT_SIZE, MemoryCache
from copage.stores.base import PageStore

T = TypeVar("T")
ALT_TOOL_NAME = "copage_recall"
LOCK_TIMEOUT = 30.0
#: First and largest pause between two ``try_lock`` attempts (seconds).
POLL_FIRST, POLL_MAX = 0.005, 0.1
#: A request with at most this many messages may be handled on the event loop.
SMALL = 32
log = logging.getLogger("copage.server")


@dataclass(slots=True)
class _Prep:
    mem: PagedMemory
    tx: AbstractContextManager[PagedMemory] | None  # None: a replay, nothing to store
    lock: AbstractContextManager[Any]
    created: bool
    head: str  # chain through the request (before the answer)
    before: dict[str, Any]
    mid: dict[str, Any]
    new: tuple[Message, ...] = ()
    raw: Sequence[Any] = ()
    replay: Outcome | None = None


@dataclass(slots=True)
class TurnResult:
    """The answer, its conversation and the ``X-Copage-Stats`` values."""

    conversation_id: str
    outcome: Outcome
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Opened:
    """The turn's conversation is locked and its new messages added (first event).

    Attributes:
        conversation_id: the conversation (a branch's new id for a regenerate).
        model: the model name answering (the stored one for a replay).
        replayed: a retry answered from the store, without an upstream call.
        point: the transcript chain through the turn's request: it names the answer
            this turn stores (a Responses API response id is made from it).
    """

    conversation_id: str
    model: str
    replayed: bool
    point: str = ""


@dataclass(frozen=True, slots=True)
class Finished:
    """The turn is committed and acknowledged (last event)."""

    result: TurnResult


TurnEvent = Opened | TextDelta | ClientToolDelta | RecallServed | Finished
"""What :meth:`ProxyService.turn` yields."""


@dataclass(frozen=True, slots=True)
class _Hint:
    """Header mode: the request continues ``seen`` at ``start``, or (None) repeats it."""

    seen: Seen
    start: int | None


class _Stale(Exception):
    """The recognised conversation moved on before its lock was taken: look again."""


class _Fork(Exception):
    """Start a new conversation instead: with ``messages`` (a branch), or the request's."""

    def __init__(self, messages: tuple[Message, ...] | None = None) -> None:
        super().__init__("fork")
        self.messages = messages


class OpenTurn:
    """A turn whose conversation is locked and whose new messages are added (uncommitted).

    Run the model on :attr:`mem` (unless :attr:`replay` already holds the answer of
    a retried request), then :meth:`commit` the outcome. Leaving the
    :meth:`ProxyService.open_turn` block without committing rolls the turn back.
    """

    def __init__(self, service: ProxyService, tenant: str, cid: str, call: ChatCall,
                 ask: Ask, prep: _Prep) -> None:
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
            svc._release_replay(self.tenant, self.prep)
            svc.metrics.inc("copage_retries_replayed_total")
            return TurnResult(self.conversation_id, out,
                              {**svc._stats_now(self.prep), "replayed": True})
        if svc.inline and self._inline_ok():
            after = svc._finish(self.tenant, self.conversation_id, self.prep, out, self.call,
                                self.ask)
        else:
            after = await _shielded(svc._run(svc._finish, self.tenant, self.conversation_id,
                                             self.prep, out, self.call, self.ask))
        return TurnResult(self.conversation_id, out, svc._stats(self.prep, out, after))

    def _inline_ok(self) -> bool:
        return len(self.prep.new) <= SMALL


class ProxyService:
    """Runs chat turns for tenants (see module docstring)."""

    def __init__(
        self, *, store: PageStore, index: TranscriptIndex, upstream: Upstream,
        paging: PagerConfig, metrics: Metrics, executor: Executor, max_recalls: int = 3,
        cache_size: int = DEFAULT_SIZE, lock_timeout: float = LOCK_TIMEOUT,
        idempotency_window: float = 600.0, clock: Callable[[], float] = time.time,
    ) -> None:
        self.store, self.index, self.upstream = store, index, upstream
        self.paging, self.metrics, self.executor = paging, metrics, executor
        self.max_recalls, self.lock_timeout = max_recalls, lock_timeout
        self.idempotency_window, self.clock = idempotency_window, clock
        self.cache = MemoryCache(store, cache_size)
        self.recent = Recent(self.cache.size)
        #: ``try_lock`` on a local store is a non-blocking flock or mutex: run it inline.
        self.local = _local(store, index)
        #: Store work runs on the event loop (no thread hops) when it is local and
        #: quick: a cached or new conversation (else the thread pool).
        self.inline = self.local and self.cache.size > 0
        self._locks: dict[tuple[str, str], tuple[asyncio.Lock, int]] = {}

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    @asynccontextmanager
    async def _guard(self, key: tuple[str, str], deadline: float) -> AsyncIterator[None]:
        """This process's queue for one conversation, waited on until ``deadline``."""
        lock, n = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, n + 1)
        try:
            left = deadline - asyncio.get_running_loop().time()
            try:
                await asyncio.wait_for(lock.acquire(), max(left, 0.0))
            except TimeoutError:
                raise self._busy() from None
            try:
                yield
            finally:
                lock.release()
        finally:
            lock, n = self._locks[key]
            if n <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, n - 1)

    def _busy(self) -> ProxyError:
        self.metrics.inc("copage_lock_timeouts_total")
        return ProxyError(409, "conversation is busy: another request on it is still "
                          "running; retry later", code="conversation_busy",
                          headers={"retry-after": "1"})

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
                   ) -> TurnResult:
        """One turn, not streamed: :meth:`turn` consumed whole.

        ``conversation_id`` comes from the header (None: recognised from the messages);
        ``small`` is False for a large request (its store work then runs in the pool);
        ``via`` names the conversation whose last request's prefix the body continued.
        """
        async with closing(self.turn(tenant, call, conversation_id, ask, small=small,
                                      via=via)) as events:
            async for event in events:
                if isinstance(event, Finished):
                    return event.result
        raise RuntimeError("unreachable: a turn ends with Finished or an error")

    async def turn(self, tenant: str, call: ChatCall, conversation_id: str | None,
                   ask: Ask | None = None, *, small: bool = True, via: str | None = None,
                   stream: bool = False) -> AsyncIterator[TurnEvent]:
        """One turn as events: :class:`Opened`, the answer's deltas as the engine yields
        them (:func:`copage.server.loop.loop_events`), then :class:`Finished` once the
        turn is committed. The same events make the streamed and the whole response;
        ``stream`` only chooses how each upstream call is made (streamed, or one reply).

        Closing the generator (or cancelling its task) before :class:`Finished` rolls
        the turn back (see :meth:`open_turn`). Errors are raised (nothing is stored).
        """
        async with self.open_turn(tenant, call, conversation_id, ask, small=small,
                                  via=via) as turn:
            if turn.replay is not None:
                last = _last_rq(turn.mem) or {}
                yield Opened(turn.conversation_id, turn.replay.model or call.model or "", True,
                             str(last.get("prev") or ""))
                for delta in replay_events(turn.replay):
                    yield delta
                yield Finished(await turn.commit(turn.replay))
                return
            model = self.upstream.model_for(call.model)
            yield Opened(turn.conversation_id, model.name, False, turn.prep.head)
            latencies: list[float] = []
            out: Outcome | None = None
            try:
                async with closing(loop_events(turn.mem, model, call,
                                                self._caller(stream, latencies),
                                                max_recalls=self.max_recalls)) as events:
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
            yield Finished(await turn.commit(out))

    def _caller(self, stream: bool, latencies: list[float]) -> Stream:
        """One upstream call as stream events: streamed, or one whole reply as one chunk."""
        async def whole(model: ChatModel, request: ChatRequest) -> AsyncIterator[StreamEvent]:
            response, _ = await self.upstream.complete(model, request)
            for event in events_of(response):
                yield event

        async def call(model: ChatModel, request: ChatRequest) -> AsyncIterator[StreamEvent]:
            t0 = time.perf_counter()
            source = self.upstream.stream(model, request) if stream else whole(model, request)
            async with closing(source) as events:
                async for event in events:
                    if event.kind == "done":
                        latency = time.perf_counter() - t0
                        latencies.append(latency)
                        self.metrics.inc("copage_upstream_calls_total")
                        self.metrics.observe_upstream(latency)
                    yield event

        return call

    @asynccontextmanager
    async def open_turn(self, tenant: str, call: ChatCall, conversation_id: str | None,
                        ask: Ask | None = None, *, small: bool = True, via: str | None = None,
                        ) -> AsyncIterator[OpenTurn]:
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
        hint: _Hint | None = None
        if not header:
            guess = self.recent.locate(tenant, call.raw, via)
        else:
            assert conversation_id is not None
            hint = self._hint(tenant, conversation_id, call)
        override: tuple[Message, ...] | None = None
        held = AsyncExitStack()
        for attempt in range(4):
            if header and override is None:
                assert conversation_id is not None
                cid = conversation_id
            else:
                if guess is None:
                    guess = (Guess("new") if attempt >= 3 or override is not None
                             else await self._locate_slow(tenant, call))
                    if (guess.kind == "new" and override is None and attempt < 3
                            and await self._hold_pending(held, tenant, call, ask, guess,
                                                         deadline)):
                        try:  # an identical request may have committed since the look
                            guess = await self._look_again(tenant, guess)
                        except BaseException:
                            await held.aclose()
                            raise
                cid = guess.conversation_id or new_conversation_id()
            cheap = override is None and self._cheap(call, guess, hint, small)
            async with AsyncExitStack() as stack:
                stack.push_async_exit(held.pop_all())  # a first turn's pending lock, if held
                await stack.enter_async_context(self._guard((tenant, cid), deadline))
                lock = await self._acquire(tenant, cid, deadline)
                try:
                    prep = await self._prepare(lock, tenant, cid, call, ask, guess, override,
                                               cheap, hint)
                except _Stale:
                    if guess is not None and guess.fast:
                        self.recent.discard(tenant, guess.conversation_id)
                    guess = None
                    continue
                except _Fork as fork:
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
                            self._release_replay(tenant, prep)
                        else:
                            await _shielded(self._run(self._abort, prep))
                return
        raise RuntimeError("unreachable: the last attempt starts a new conversation")

    async def _hold_pending(self, held: AsyncExitStack, tenant: str, call: ChatCall,
                            ask: Ask, guess: Guess, deadline: float) -> bool:
        """Take the pending lock of a first turn's request (into ``held``); True if taken.

        A transparent client's first turn has no conversation yet, so a retry arriving
        while the first attempt runs would not find it among committed turns. Both
        take the store's lock on a name made of the request's chain, fingerprint and
        ``Idempotency-Key`` (across workers); the first holds it for its whole turn. A
        request that may be a retry (a key, or no sign of a first attempt) waits for
        it; once it holds the lock, the caller looks again (:meth:`_look_again`) and
        finds the committed turn (a retry, answered from the store) or nothing (the
        first attempt failed, or there was none: this one runs the turn). A request
        that says it is a first attempt (``X-Stainless-Retry-Count: 0``) does not wait:
        if the name is busy, it goes ahead unregistered (False).
        """
        import hashlib

        ident = f"key:{ask.key}" if ask.key is not None else f"fp:{call.fingerprint}"
        # "/" is in no conversation id (copage.ids): this name is no conversation's lock
        name = "pending/" + hashlib.sha256(f"{guess.prev}\0{ident}".encode(
            "utf-8", "surrogatepass")).hexdigest()[:32]
        wait = ask.key is not None or ask.retry_count != 0
        key = (tenant, name)
        if not wait and key in self._locks and self._locks[key][0].locked():
            return False
        async with AsyncExitStack() as mine:
            await mine.enter_async_context(self._guard(key, deadline))
            lock: AbstractContextManager[Any] = self.store.try_lock(name, tenant=tenant) \
                if hasattr(self.store, "try_lock") else nullcontext(True)
            if not await self._enter(lock):
                lock.__exit__(None, None, None)
                if not wait:
                    return False
                lock = await self._acquire(tenant, name, deadline)
            mine.push_async_callback(self._leave, lock)
            held.push_async_exit(mine.pop_all())
        return True

    async def _look_again(self, tenant: str, guess: Guess) -> Guess:
        """A new-conversation guess checked again under the pending lock: the request may
        have been committed (by the identical one just waited for, or one that ran
        between the first look and taking the lock)."""
        cid = await self._index(self.index.find_prev, tenant, guess.prev)
        return guess if cid is None else Guess("retry", cid, prev=guess.prev)

    async def _leave(self, lock: AbstractContextManager[Any]) -> None:
        """``lock.__exit__`` (in the pool for a remote store), even if this task is cancelled."""
        if self.local:
            lock.__exit__(None, None, None)
        else:
            await _shielded(self._run(lock.__exit__, None, None, None))

    def _hint(self, tenant: str, cid: str, call: ChatCall) -> _Hint | None:
        """Header mode: how the request relates to this worker's memory of the
        conversation's last request (checked against the stored head under the lock)."""
        seen = self.recent.get(tenant, cid)
        if seen is None:
            return None
        start = continues(seen, call.raw)
        if start is not None:
            return _Hint(seen, start)
        return _Hint(seen, None) if repeats(seen, call.raw) else None

    def _cheap(self, call: ChatCall, guess: Guess | None, hint: _Hint | None,
               small: bool) -> bool:
        """Whether preparing this turn is cheap enough for the event loop."""
        if not small:
            return False
        if guess is not None:
            return guess.fast or (guess.kind == "new" and len(call.raw) <= SMALL)
        return len(call.raw) <= SMALL or hint is not None

    async def _locate_slow(self, tenant: str, call: ChatCall) -> Guess:
        """Transparent mode without this worker's memory: hash the request, ask the index."""
        def find() -> Guess:
            msgs = call.messages  # validates every message (a 400 names the bad one)
            heads = chain(msgs)
            prev_cid = self.index.find_prev(tenant, heads[-1])
            if prev_cid is not None:
                return Guess("retry", prev_cid, prev=heads[-1])
            wanted = [h if i == 0 or msgs[i - 1].role == "assistant" else ""
                      for i, h in enumerate(heads[:-1])]
            match = self.index.find(tenant, wanted)
            if match is None:
                return Guess("new", prev=heads[-1])
            return Guess("continue", match.conversation_id, start=match.length,
                         head=heads[match.length])

        return await self._index(find)

    async def _index(self, fn: Callable[..., T], *args: Any) -> T:
        """An index lookup in the pool; the index's failure is a 503 ``index_error``."""
        try:
            return await self._run(fn, *args)
        except ProxyError:
            raise
        except Exception as e:  # noqa: BLE001 - any backend's failure: 503, not 500
            log.error("transcript index lookup failed (%s)", type(e).__name__)
            raise ProxyError(503, "the conversation index is unavailable", type="server_error",
                             code="index_error") from None

    async def _prepare(self, lock: AbstractContextManager[Any], tenant: str, cid: str,
                       call: ChatCall, ask: Ask, guess: Guess | None,
                       override: tuple[Message, ...] | None, cheap: bool,
                       hint: _Hint | None = None) -> _Prep:
        args = (lock, tenant, cid, call, ask, guess, override, hint)
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

    async def _acquire(self, tenant: str, cid: str, deadline: float
                       ) -> AbstractContextManager[Any]:
        """The store's lock on the conversation, entered (see module docstring).

        Polls ``try_lock`` with exponential backoff until ``deadline``; a store
        without ``try_lock`` falls back to a blocking ``lock`` in the pool.
        """
        if not hasattr(self.store, "try_lock"):
            lock = self.store.lock(cid, tenant=tenant)
            await self._enter(lock)
            return lock
        loop = asyncio.get_running_loop()
        pause = POLL_FIRST
        while True:
            attempt: AbstractContextManager[bool] = self.store.try_lock(
                cid, tenant=tenant)
            if await self._enter(attempt):
                return attempt
            attempt.__exit__(None, None, None)  # not taken: closes a file or returns a conn
            left = deadline - loop.time()
            if left <= 0:
                raise self._busy()
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, POLL_MAX)

    async def _enter(self, lock: AbstractContextManager[Any]) -> Any:
        """``lock.__enter__()`` (inline for local stores); released if this task is cancelled."""
        if self.local:
            return lock.__enter__()
        fut = asyncio.get_running_loop().run_in_executor(self.executor, lock.__enter__)
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:
            def release(f: asyncio.Future[Any]) -> None:
                if not f.cancelled() and f.exception() is None:
                    self.executor.submit(lock.__exit__, None, None, None)
            fut.add_done_callback(release)
            raise

    def _abort_later(self, fut: asyncio.Future[_Prep]) -> None:
        if not fut.cancelled() and fut.exception() is None:
            prep = fut.result()
            if prep.replay is not None:
                self.executor.submit(self._release_replay, prep.mem.tenant, prep)
            else:
                self.executor.submit(self._abort, prep)

    # ------------------------------------------- store (thread pool or inline)
    def _prepare_inline(self, lock: AbstractContextManager[Any], tenant: str, cid: str,
                        call: ChatCall, ask: Ask, guess: Guess | None,
                        override: tuple[Message, ...] | None, hint: _Hint | None
                        ) -> _Prep | None:
        """Fast path on the event loop: conversation cached or new (None: use the pool)."""
        # A cold load (O(turns)) goes to the thread pool instead.
        try:
            cold = not self.cache.holds(tenant, cid) and self.store.version(  # type: ignore[attr-defined]
                cid, tenant=tenant) is not None
        except BaseException:
            lock.__exit__(None, None, None)
            raise
        if cold:
            return None
        return self._prepare_locked(lock, tenant, cid, call, ask, guess, override, hint)

    def _prepare_locked(
        self, lock: AbstractContextManager[Any], tenant: str, cid: str, call: ChatCall,
        ask: Ask, guess: Guess | None, override: tuple[Message, ...] | None,
        hint: _Hint | None = None,
    ) -> _Prep:
        """Load (or create) the conversation and add the new messages; ``lock`` is held.

        On failure the lock is released (and a conversation created here deleted).
        """
        created = False
        tx: AbstractContextManager[PagedMemory] | None = None
        mem: PagedMemory | None = None
        try:
            cached = self.cache.take(tenant, cid)
            if cached is not None:
                mem = cached
            elif self.store.exists(cid, tenant=tenant):
                mem = PagedMemory(store=self.store, conversation_id=cid, tenant=tenant)
            elif guess is not None and guess.kind != "new":
                raise _Stale(cid)
            else:
                # Validate before creating: a rejected request must leave no row behind.
                first = override if override is not None else call.messages
                config = self._config_for(call)
                _check_new(first, config.tool_name, call)
                mem = PagedMemory(store=self.store, conversation_id=cid, tenant=tenant,
                                  config=config)
                created = True
            plan = self._plan(mem, tenant, cid, call, ask, guess, override, hint)
            if isinstance(plan, Outcome):
                return _Prep(mem, None, lock, created, _head(mem), {}, {}, replay=plan)
            new, h = plan
            _check_new(new, mem.config.tool_name, call)
            before = mem.stats().to_dict()
            tx = mem.transaction()
            tx.__enter__()
            for m in new:
                h = link(h, m)
                if m.role == "system":
                    mem.add("system", m.text)
                else:
                    mem.add(m.role, m.text, tool_calls=list(m.tool_calls),
                            tool_call_id=m.tool_call_id, h=h)
            return _Prep(mem, tx, lock, created, h, before, mem.stats().to_dict(), new,
                         call.raw if override is None else ())
        except BaseException as e:
            keep = isinstance(e, (_Stale, _Fork, ProxyError)) and tx is None and not created
            try:
                if tx is not None:  # drop the pending changes, reload as stored
                    tx.__exit__(type(e), e, e.__traceback__)
                elif keep and mem is not None:
                    self.cache.put(mem)  # untouched: stays warm
            finally:
                self._release(lock, tenant, cid, created)
            raise

    def _plan(self, mem: PagedMemory, tenant: str, cid: str, call: ChatCall, ask: Ask,
              guess: Guess | None, override: tuple[Message, ...] | None,
              hint: _Hint | None = None) -> tuple[tuple[Message, ...], str] | Outcome:
        """The new messages and the chain before them, or the replayed answer of a retry.

        Raises ``_Stale`` (the guess no longer holds), ``_Fork`` (a regenerate: start
        a branch) or a 409 (header mode, messages unrelated to the conversation).
        """
        head = _head(mem)
        rq = _last_rq(mem)
        if override is not None:
            return override, head
        if guess is not None:  # transparent mode
            if guess.kind == "new":
                return call.messages, head
            if guess.kind == "continue":
                if head != guess.head:
                    raise _Stale(cid)
                self._check_key(rq, ask)
                return call.convert(guess.start), head
            if rq is None or rq.get("prev") != guess.prev:
                raise _Stale(cid)
            return self._again(mem, rq, call, ask) or _fork(None)
        # header mode
        if mem.last_turn is None and mem.system is None:
            return call.messages, head
        n = len(call.raw)
        context = rq is not None and n > int(rq.get("k") or 0)  # more than the last request
        if hint is None and len(call.raw) <= SMALL:
            hint = self._hint(tenant, cid, call)
        if hint is not None and hint.seen.head == head:
            if hint.start is not None:
                self._check_key(rq, ask)
                return call.convert(hint.start), head
            if rq is not None:  # the last request again
                out = self._again(mem, rq, call, ask)
                if out is not None:
                    return out
                if context:  # a regenerate
                    raise _Fork(self._branch(mem, rq, call))
                return call.messages, head  # only new messages: the same ones again
        msgs = call.messages
        heads = chain(msgs)
        for i in range(n - 1, 0, -1):  # exact continuation: the history, then new messages
            if heads[i] == head:
                self._check_key(rq, ask)
                return msgs[i:], head
        if heads[n] == head:
            raise bad_request("no new message: the conversation already ends with these "
                              "messages", "no_new_messages", "messages")
        turns = mem.turns  # a copy (O(turns)): only here, where the request is hashed anyway
        overlap = _overlap(msgs, turns)
        if overlap is not None:  # a suffix of the transcript, then new messages
            self._check_key(rq, ask)
            return msgs[overlap:], head
        if rq is not None and (heads[n] == rq.get("prev") or _asks_again(msgs, turns, rq)):
            out = self._again(mem, rq, call, ask)  # the last turn's request again
            if out is not None:
                return out
            if context:  # with earlier messages: a regenerate
                raise _Fork(self._branch(mem, rq, call))
            # only the new messages, the same as last time, and not a retry: new messages
        if any(m.role == "assistant" for m in msgs):
            raise ProxyError(409, "the messages do not continue this conversation (header "
                             "X-Copage-Conversation): send only the new messages, or the whole "
                             "history as returned, or drop the header to start a new "
                             "conversation", code="conversation_mismatch", param="messages")
        self._check_key(rq, ask)
        return msgs, head  # only new messages

    def _again(self, mem: PagedMemory, rq: Mapping[str, Any], call: ChatCall, ask: Ask
               ) -> Outcome | None:
        """The last turn's request came again: its stored answer if this is a retry."""
        if ask.key is not None and rq.get("key") == ask.key and rq.get("fp") != call.fingerprint:
            raise _key_reused()
        if is_retry(rq, call, ask, self.idempotency_window):
            return _replay(mem, rq)
        return None

    def _check_key(self, rq: Mapping[str, Any] | None, ask: Ask) -> None:
        if ask.key is not None and rq is not None and rq.get("key") == ask.key:
            raise _key_reused()

    def _branch(self, mem: PagedMemory, rq: Mapping[str, Any], call: ChatCall
                ) -> tuple[Message, ...]:
        """The history a regenerate branches from: the transcript before the last turn,
        then that turn's request messages again (header mode)."""
        k, kt = int(rq.get("k") or 0), int(rq.get("kt") or 0)
        turns, system = mem.turns, mem.system
        before = [answer_of(t) for t in turns[: len(turns) - kt - 1]]
        again = list(call.messages[len(call.raw) - k:])
        first = [Message("system", system)] if system is not None and not any(
            m.role == "system" for m in again) else []
        return tuple(first + before + again)

    def _config_for(self, call: ChatCall) -> PagerConfig:
        if self.paging.tool_name in call.tool_names:
            return replace(self.paging, tool_name=ALT_TOOL_NAME)
        return self.paging

    def _release(self, lock: AbstractContextManager[Any], tenant: str, cid: str,
                 created: bool) -> None:
        try:
            if created:
                self.store.delete_conversation(cid, tenant=tenant)
        finally:
            lock.__exit__(None, None, None)

    def _release_replay(self, tenant: str, prep: _Prep) -> None:
        try:
            if not prep.created:
                self.cache.put(prep.mem)
        finally:
            self._release(prep.lock, tenant, prep.mem.conversation_id, prep.created)

    def _abort(self, prep: _Prep) -> None:
        try:
            if prep.tx is not None:
                prep.tx.__exit__(RuntimeError, RuntimeError("turn failed"), None)
        finally:
            self._release(prep.lock, prep.mem.tenant, prep.mem.conversation_id, prep.created)

    def _finish(self, tenant: str, cid: str, prep: _Prep, out: Outcome, call: ChatCall,
                ask: Ask) -> dict[str, Any]:
        assert prep.tx is not None
        try:
            calls = [{"id": c.id, "type": "function",
                      "function": {"name": c.name, "arguments": c.arguments}}
                     for c in out.tool_calls]
            answer = Message("assistant", out.text, tuple(calls))
            head = link(prep.head, answer)
            rq = request_info(call, ask, prep.new, prep.head, digest(prep.new),
                              out.finish_reason, out.model,
                              (out.prompt_tokens, out.completion_tokens), self.clock())
            rq["kt"] = sum(m.role != "system" for m in prep.new)
            prep.mem.add("assistant", out.text, tool_calls=calls, h=head, **{RQ: rq})
            after = prep.mem.stats().to_dict()
            prep.tx.__exit__(None, None, None)
        except BaseException:
            self._abort(prep)
            raise
        # Committed: from here on the turn is acknowledged whatever happens, else a
        # client's retry would store it twice. The index and caches are lookup aids.
        try:
            try:
                self.index.put(tenant, cid, head, prep.head)
            except Exception as e:  # noqa: BLE001 - the turn is committed: acknowledge it
                self.metrics.inc("copage_index_errors_total")
                log.warning("transcript index update failed after a committed turn (%s); "
                            "the conversation's next request may not be recognised",
                            type(e).__name__)
            try:
                self.cache.put(prep.mem)  # only now: a failed turn never leaves it cached
                known = prep.raw.known_prefix() if isinstance(prep.raw, Messages) else None
                if known is not None:
                    self.recent.put(tenant, cid, Seen(known, answer.canonical(), head,
                                                      prep.head))
                else:
                    self.recent.discard(tenant, cid)
            except Exception as e:  # noqa: BLE001 - as above
                log.warning("conversation cache update failed (%s)", type(e).__name__)
        finally:
            prep.lock.__exit__(None, None, None)
        return after

    # ------------------------------------------------------------------ deleting
    async def delete(self, tenant: str, conversation_id: str) -> None:
        """Delete a conversation of ``tenant`` from the store and this worker's caches,
        under its locks (a turn running on it finishes first). Raises
        ``ConversationNotFound`` when the tenant has no such conversation."""
        key = (tenant, conversation_id)
        deadline = asyncio.get_running_loop().time() + self.lock_timeout
        async with self._guard(key, deadline):
            lock = await self._acquire(tenant, conversation_id, deadline)

            def work() -> None:
                try:
                    self.cache.discard(tenant, conversation_id)
                    self.recent.discard(tenant, conversation_id)
                    self.store.delete_conversation(conversation_id, tenant=tenant)
                finally:
                    lock.__exit__(None, None, None)

            await _shielded(self._run(work))

    # ------------------------------------------------------------------ stats
    def _stats_now(self, prep: _Prep) -> dict[str, Any]:
        s = prep.mem.stats()
        return {"pages": s.pages, "resident_pages": len(s.resident),
                "evicted_pages": s.evicted, "recalls": 0, "recalled": [], "faults": 0,
                "upstream_calls": 0}

    def _stats(self, prep: _Prep, out: Outcome, after: dict[str, Any]) -> dict[str, Any]:
        b, m = prep.before, prep.mid
        delta = {k: int(after[k]) - int(b[k]) for k in ("pages", "page_ins", "hits", "evictions")}
        inc = self.metrics.inc
        inc("copage_turns_total")
        inc("copage_pages_total", delta["pages"])
        inc("copage_faults_total", delta["page_ins"])  # recall and speculative page-ins
        inc("copage_hits_total", delta["hits"])
        inc("copage_evictions_total", delta["evictions"])
        inc("copage_recalls_total", len(out.recalls))
        inc("copage_prompt_tokens_sent_total", int(m["prompt_tokens"]))
        inc("copage_prompt_tokens_full_total", int(m["full_tokens"]))
        inc("copage_upstream_prompt_tokens_total", out.prompt_tokens)
        inc("copage_upstream_completion_tokens_total", out.completion_tokens)
        # Prompt tokens repeating the previous request's prefix (divide by the next one).
        pa, pb = after.get("prompt_cache") or {}, b.get("prompt_cache") or {}
        for key in ("prefix_tokens", "prompt_tokens"):
            inc(f"copage_prompt_cache_{key}_total",
                max(0, int(pa.get(key, 0)) - int(pb.get(key, 0))))
        return {
            "pages": after["pages"], "resident_pages": len(after["resident"]),
            "evicted_pages": after["evicted"], "recalls": len(out.recalls),
            "recalled": [r.page for r in out.recalls if r.page],
            "faults": delta["page_ins"], "upstream_calls": out.calls,
            "prompt_tokens": m["prompt_tokens"], "full_tokens": m["full_tokens"],
            "upstream_prompt_tokens": out.prompt_tokens,
        }


def _fork(messages: tuple[Message, ...] | None) -> Any:
    """Start a new conversation: a branch holding ``messages``, or the request's (None)."""
    raise _Fork(messages)


def _key_reused() -> ProxyError:
    return ProxyError(422, "this Idempotency-Key was already used for another request on "
                      "this conversation", code="idempotency_key_reused")


def _local(store: PageStore, index: TranscriptIndex) -> bool:
    """True for in-process / local-file stores and indexes with a ``try_lock``."""
    from copage.server.transcript import MemoryIndex, SQLiteIndex
    from copage.stores.memory import MemoryStore
    from copage.stores.sqlite import SQLiteStore

    return (isinstance(store, (MemoryStore, SQLiteStore))
            and isinstance(index, (MemoryIndex, SQLiteIndex)))


async def _shielded(aw: Any) -> Any:
    """Await ``aw`` to its end even if this task is cancelled meanwhile."""
    fut = asyncio.ensure_future(aw)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        await asyncio.wait([fut])
        raise


def _head(mem: PagedMemory) -> str:
    last = mem.last_turn
    if last is None:
        return GENESIS
    h = last.meta.get("h")
    return str(h) if h else "unhashed:" + mem.conversation_id


def _last_rq(mem: PagedMemory) -> Mapping[str, Any] | None:
    last = mem.last_turn
    if last is None or last.role != "assistant":
        return None
    rq = last.meta.get(RQ)
    return rq if isinstance(rq, Mapping) else None


def _replay(mem: PagedMemory, rq: Mapping[str, Any]) -> Outcome:
    last = mem.last_turn
    assert last is not None  # a replay answers the stored last turn
    usage = rq.get("usage") or [0, 0]
    return Outcome(text=last.text, tool_calls=[ToolCall(c.id, c.name, c.arguments)
                                               for c in last.tool_calls],
                   finish_reason=str(rq.get("finish") or "stop"),
                   model=str(rq.get("model") or ""), prompt_tokens=int(usage[0]),
                   completion_tokens=int(usage[1]))


def _overlap(msgs: Sequence[Message], turns: Sequence[Any]) -> int | None:
    """Where the new messages start if ``msgs`` begins with a suffix of the stored turns
    that includes the last one (system messages aside), else None."""
    if not turns:
        return None
    last = answer_of(turns[-1]).canonical()
    p = last_assistant([{"role": m.role} for m in msgs])
    while p is not None and p < len(msgs) - 1:
        if msgs[p].canonical() == last:
            mine = [m for m in msgs[: p + 1] if m.role != "system"]
            if len(mine) <= len(turns) and all(
                    m.canonical() == answer_of(t).canonical()
                    for m, t in zip(mine, turns[len(turns) - len(mine):], strict=True)):
                return p + 1
        p = next((i for i in range(p - 1, -1, -1) if msgs[i].role == "assistant"), None)
    return None


def _asks_again(msgs: Sequence[Message], turns: Sequence[Any], rq: Mapping[str, Any]) -> bool:
    """Whether ``msgs`` ends with the last turn's request messages, after nothing or a
    suffix of the transcript before that turn."""
    k, kt = int(rq.get("k") or 0), int(rq.get("kt") or 0)
    if k == 0 or len(msgs) < k or digest(msgs[len(msgs) - k:]) != rq.get("nd"):
        return False
    earlier = [m for m in msgs[: len(msgs) - k] if m.role != "system"]
    stored = turns[: len(turns) - kt - 1]
    if len(earlier) > len(stored):
        return False
    return all(m.canonical() == answer_of(t).canonical()
               for m, t in zip(earlier, stored[len(stored) - len(earlier):], strict=True))


def _check_new(new: tuple[Message, ...], name: str, call: ChatCall) -> None:
    if not new:
        raise bad_request("no new message: the conversation already ends with these messages",
                          "no_new_messages", "messages")
    if new[-1].role not in ("user", "tool"):
        raise bad_request("the last message must be a user or tool message", param="messages")
    if name in call.tool_names:
        raise bad_request(f"a client tool is named {name!r}, like this conversation's recall "
                          "tool; rename the client tool", "tool_name_conflict", "tools")
