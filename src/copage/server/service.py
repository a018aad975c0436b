"""One chat turn through the proxy: find the conversation, lock it, page, loop, commit.

Store work is synchronous, so it runs in a thread pool in two steps (prepare:
load + add the new messages; finish: add the answer + commit + unlock), with the
upstream calls awaited in between. With a local store (memory, SQLite) and a
cached conversation, both steps run inline on the event loop instead (well under
a millisecond each), saving two thread hops per turn. The store's
per-conversation lock is held for the whole turn, so requests on one conversation
at several workers are serialised; the turn is one deferred transaction, so a
failed turn leaves the stored conversation as it was.

The lock is taken with ``try_lock`` polled from the event loop with backoff, never
by a pool thread waiting on it: two workers whose pools were full of threads
waiting on each other's locks would deadlock. A request that cannot get the lock
within ``lock_timeout`` seconds gets a 409 ``conversation_busy``. An asyncio lock
per conversation keeps waiting requests of this process from polling the store.
Open conversations are kept in a per-worker
:class:`~copage.server.memcache.MemoryCache` and reloaded only when the stored
version moved on (another worker wrote). Once a turn is committed, the transcript
index and the cache are updated best-effort: the turn is acknowledged even if
they fail (a lost head only means a transparent client's next request starts a
new conversation).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Executor
from contextlib import AbstractContextManager, asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from copage.core.config import PagerConfig
from copage.memory import PagedMemory, new_conversation_id
from copage.server.errors import ProxyError, bad_request
from copage.server.loop import Outcome, run_loop
from copage.server.memcache import DEFAULT_SIZE, MemoryCache
from copage.server.metrics import Metrics
from copage.server.request import ChatCall, Message
from copage.server.transcript import GENESIS, TranscriptIndex, chain, link
from copage.server.upstream import Upstream
from copage.stores.base import PageStore

T = TypeVar("T")
ALT_TOOL_NAME = "copage_recall"
LOCK_TIMEOUT = 30.0
#: First and largest pause between two ``try_lock`` attempts (seconds).
POLL_FIRST, POLL_MAX = 0.005, 0.1
log = logging.getLogger("copage.server")


@dataclass(slots=True)
class _Prep:
    mem: PagedMemory
    tx: AbstractContextManager[PagedMemory]
    lock: AbstractContextManager[Any]
    created: bool
    head: str
    before: dict[str, Any]
    mid: dict[str, Any]


@dataclass(slots=True)
class TurnResult:
    """The answer, its conversation and the ``X-Copage-Stats`` values."""

    conversation_id: str
    outcome: Outcome
    stats: dict[str, Any] = field(default_factory=dict)


class _Stale(Exception):
    """The recognised conversation moved on before its lock was taken: look again."""


class ProxyService:
    """Runs chat turns for tenants (see module docstring)."""

    def __init__(
        self, *, store: PageStore, index: TranscriptIndex, upstream: Upstream,
        paging: PagerConfig, metrics: Metrics, executor: Executor, max_recalls: int = 3,
        cache_size: int = DEFAULT_SIZE, lock_timeout: float = LOCK_TIMEOUT,
    ) -> None:
        self.store, self.index, self.upstream = store, index, upstream
        self.paging, self.metrics, self.executor = paging, metrics, executor
        self.max_recalls, self.lock_timeout = max_recalls, lock_timeout
        self.cache = MemoryCache(store, cache_size)
        #: ``try_lock`` on a local store is a non-blocking flock or mutex: run it inline.
        self.local = _local(store, index)
        #: Store work runs on the event loop (no thread hops) when it is local and
        #: quick: a cached or new conversation (else the thread pool).
        self.inline = self.local and self.cache.size > 0
        self._locks: dict[tuple[str, str], tuple[asyncio.Lock, int]] = {}

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    @asynccontextmanager
    async def _guard(self, key: tuple[str, str]) -> AsyncIterator[None]:
        lock, n = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, n + 1)
        try:
            async with lock:
                yield
        finally:
            lock, n = self._locks[key]
            if n <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, n - 1)

    # ------------------------------------------------------------------ turns
    async def chat(self, tenant: str, call: ChatCall, conversation_id: str | None) -> TurnResult:
        """One turn: ``conversation_id`` from the header, or recognised from the messages."""
        if conversation_id is not None:
            return await self._turn(tenant, conversation_id, call, None)
        heads = chain(call.messages)
        for _ in range(3):
            match = await self._find(tenant, heads[:-1])
            if match is None:
                break
            try:
                return await self._turn(tenant, match.conversation_id, call, match.length)
            except _Stale:
                continue
        return await self._turn(tenant, new_conversation_id(), call, 0)

    async def _find(self, tenant: str, heads: list[str]) -> Any:
        try:
            return await self._run(self.index.find, tenant, heads)
        except Exception as e:  # noqa: BLE001 - any backend's failure: 503, not 500
            log.error("transcript index lookup failed (%s)", type(e).__name__)
            raise ProxyError(503, "the conversation index is unavailable", type="server_error",
                             code="index_error") from None

    async def _turn(
        self, tenant: str, cid: str, call: ChatCall, expect: int | None
    ) -> TurnResult:
        async with self._guard((tenant, cid)):
            lock = await self._acquire(tenant, cid)
            prep = self._prepare_inline(lock, tenant, cid, call, expect) if self.inline else None
            if prep is None:
                fut = asyncio.get_running_loop().run_in_executor(
                    self.executor, self._prepare_locked, lock, tenant, cid, call, expect
                )
                try:
                    prep = await asyncio.shield(fut)
                except asyncio.CancelledError:
                    fut.add_done_callback(self._abort_later)
                    raise
            try:
                model = self.upstream.model_for(call.model)
                out = await run_loop(prep.mem, model, call, self._complete,
                                     max_recalls=self.max_recalls)
            except BaseException as e:
                await _shielded(self._run(self._abort, prep))
                if isinstance(e, Exception):
                    self.metrics.inc("copage_upstream_errors_total", kind=type(e).__name__)
                raise
            if self.inline:
                after = self._finish(tenant, cid, prep, out)
            else:
                after = await _shielded(self._run(self._finish, tenant, cid, prep, out))
        return TurnResult(cid, out, self._stats(prep, out, after))

    async def _acquire(self, tenant: str, cid: str) -> AbstractContextManager[Any]:
        """The store's lock on the conversation, entered (see module docstring).

        Polls ``try_lock`` with exponential backoff up to ``lock_timeout``; a store
        without ``try_lock`` falls back to a blocking ``lock`` in the pool.
        """
        if not hasattr(self.store, "try_lock"):
            lock = self.store.lock(cid, tenant=tenant)
            await self._enter(lock)
            return lock
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.lock_timeout
        pause = POLL_FIRST
        while True:
            attempt: AbstractContextManager[bool] = self.store.try_lock(
                cid, tenant=tenant)
            if await self._enter(attempt):
                return attempt
            attempt.__exit__(None, None, None)  # not taken: closes a file or returns a conn
            left = deadline - loop.time()
            if left <= 0:
                self.metrics.inc("copage_lock_timeouts_total")
                raise ProxyError(409, "conversation is busy: another request on it is still "
                                 "running; retry later", code="conversation_busy",
                                 headers={"retry-after": "1"})
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

    async def _complete(self, model: Any, request: Any) -> Any:
        response, latency = await self.upstream.complete(model, request)
        self.metrics.inc("copage_upstream_calls_total")
        self.metrics.observe_upstream(latency)
        return response, latency

    def _abort_later(self, fut: asyncio.Future[_Prep]) -> None:
        if not fut.cancelled() and fut.exception() is None:
            self.executor.submit(self._abort, fut.result())

    # ------------------------------------------- store (thread pool or inline)
    def _prepare_inline(
        self, lock: AbstractContextManager[Any], tenant: str, cid: str, call: ChatCall,
        expect: int | None,
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
        return self._prepare_locked(lock, tenant, cid, call, expect)

    def _prepare_locked(
        self, lock: AbstractContextManager[Any], tenant: str, cid: str, call: ChatCall,
        expect: int | None,
    ) -> _Prep:
        """Load (or create) the conversation and add the new messages; ``lock`` is held.

        On failure the lock is released (and a conversation created here deleted).
        """
        created = False
        tx: AbstractContextManager[PagedMemory] | None = None
        try:
            cached = self.cache.take(tenant, cid)
            if cached is not None:
                mem = cached
            elif self.store.exists(cid, tenant=tenant):
                mem = PagedMemory(store=self.store, conversation_id=cid, tenant=tenant)
            elif expect:
                raise _Stale(cid)
            else:
                # Validate before creating: a rejected request must leave no row behind.
                config = self._config_for(call)
                _check_new(call.messages, config.tool_name, call)
                mem = PagedMemory(store=self.store, conversation_id=cid, tenant=tenant,
                                  config=config)
                created = True
            head = _head(mem)
            heads = chain(call.messages)
            if expect is not None:
                if heads[expect] != head:
                    raise _Stale(cid)
                start, h = expect, head
            else:
                start = next((i for i in range(len(heads) - 1, 0, -1) if heads[i] == head), 0)
                h = head
            new = call.messages[start:]
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
            return _Prep(mem, tx, lock, created, h, before, mem.stats().to_dict())
        except BaseException as e:
            try:
                if tx is not None:  # drop the pending changes, reload as stored
                    tx.__exit__(type(e), e, e.__traceback__)
            finally:
                self._release(lock, tenant, cid, created)
            raise

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

    def _abort(self, prep: _Prep) -> None:
        try:
            prep.tx.__exit__(RuntimeError, RuntimeError("turn failed"), None)
        finally:
            self._release(prep.lock, prep.mem.tenant, prep.mem.conversation_id, prep.created)

    def _finish(self, tenant: str, cid: str, prep: _Prep, out: Outcome) -> dict[str, Any]:
        try:
            calls = [{"id": c.id, "type": "function",
                      "function": {"name": c.name, "arguments": c.arguments}}
                     for c in out.tool_calls]
            answer = Message("assistant", out.text, tuple(calls))
            head = link(prep.head, answer)
            prep.mem.add("assistant", out.text, tool_calls=calls, h=head)
            after = prep.mem.stats().to_dict()
            prep.tx.__exit__(None, None, None)
        except BaseException:
            self._abort(prep)
            raise
        # Committed: from here on the turn is acknowledged whatever happens, else a
        # client's retry would store it twice. The index and cache are lookup aids.
        try:
            try:
                self.index.put(tenant, cid, head)
            except Exception as e:  # noqa: BLE001 - the turn is committed: acknowledge it
                self.metrics.inc("copage_index_errors_total")
                log.warning("transcript index update failed after a committed turn (%s); "
                            "the conversation's next request may not be recognised",
                            type(e).__name__)
            try:
                self.cache.put(prep.mem)  # only now: a failed turn never leaves it cached
            except Exception as e:  # noqa: BLE001 - as above
                log.warning("conversation cache update failed (%s)", type(e).__name__)
        finally:
            prep.lock.__exit__(None, None, None)
        return after

    # ------------------------------------------------------------------ stats
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
        return {
            "pages": after["pages"], "resident_pages": len(after["resident"]),
            "evicted_pages": after["evicted"], "recalls": len(out.recalls),
            "recalled": [r.page for r in out.recalls if r.page],
            "faults": delta["page_ins"], "upstream_calls": out.calls,
            "prompt_tokens": m["prompt_tokens"], "full_tokens": m["full_tokens"],
            "upstream_prompt_tokens": out.prompt_tokens,
        }


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
    turns = mem.pager.turns
    if not turns:
        return GENESIS
    h = turns[-1].meta.get("h")
    return str(h) if h else "unhashed:" + mem.conversation_id


def _check_new(new: tuple[Message, ...], name: str, call: ChatCall) -> None:
    if not new:
        raise bad_request("no new message: the conversation already ends with these messages",
                          "no_new_messages", "messages")
    if new[-1].role not in ("user", "tool"):
        raise bad_request("the last message must be a user or tool message", param="messages")
    if name in call.tool_names:
        raise bad_request(f"a client tool is named {name!r}, like this conversation's recall "
                          "tool; rename the client tool", "tool_name_conflict", "tools")
