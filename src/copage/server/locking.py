"""Locking one conversation for a turn: the waits, their one deadline and the 409.

Two waits share one deadline: this process's queue per conversation (an asyncio
lock, so waiting requests of one worker do not all poll the store), then the
store's lock. That one is taken with ``try_lock`` polled from the event loop with
backoff, never by a pool thread waiting on it: two workers whose pools were full
of threads waiting on each other's locks would deadlock. A request that cannot
get the conversation before the deadline gets a 409 ``conversation_busy``. With a
local store (memory, SQLite) ``try_lock`` is a non-blocking flock or mutex and is
entered inline; a remote store's is entered in the thread pool.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from concurrent.futures import Executor
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from typing import Any

from copage.server.error_body import ProxyError
from copage.server.metrics import Metrics
from copage.server.transcript import TranscriptIndex
from copage.stores.protocol import PageStore

#: Seconds a request may wait for its conversation before the 409.
LOCK_TIMEOUT = 30.0
#: First and largest pause between two ``try_lock`` attempts (seconds).
POLL_FIRST, POLL_MAX = 0.005, 0.1


class Locks:
    """One worker's conversation locks on ``store`` (see module docstring)."""

    def __init__(self, store: PageStore, executor: Executor, metrics: Metrics, *,
                 local: bool) -> None:
        self.store, self.executor, self.metrics, self.local = store, executor, metrics, local
        #: This process's queue per (tenant, name): its asyncio lock and how many use it.
        self.queues: dict[tuple[str, str], tuple[asyncio.Lock, int]] = {}

    def queued(self, key: tuple[str, str]) -> bool:
        """Whether a request of this process holds ``key``'s queue now."""
        return key in self.queues and self.queues[key][0].locked()

    @asynccontextmanager
    async def guard(self, key: tuple[str, str], deadline: float) -> AsyncIterator[None]:
        """This process's queue for one conversation, waited on until ``deadline``."""
        lock, n = self.queues.get(key, (asyncio.Lock(), 0))
        self.queues[key] = (lock, n + 1)
        try:
            left = deadline - asyncio.get_running_loop().time()
            try:
                await asyncio.wait_for(lock.acquire(), max(left, 0.0))
            except TimeoutError:
                raise self.busy() from None
            try:
                yield
            finally:
                lock.release()
        finally:
            lock, n = self.queues[key]
            if n <= 1:
                del self.queues[key]
            else:
                self.queues[key] = (lock, n - 1)

    def busy(self) -> ProxyError:
        """The 409 for a conversation not had before the deadline (counted)."""
        self.metrics.inc("copage_lock_timeouts_total")
        return ProxyError(409, "conversation is busy: another request on it is still "
                          "running; retry later", code="conversation_busy",
                          headers={"retry-after": "1"})

    def try_lock(self, tenant: str, name: str) -> AbstractContextManager[Any]:
        """The store's ``try_lock`` on ``name`` (not entered); a store without one: free."""
        if hasattr(self.store, "try_lock"):
            lock: AbstractContextManager[Any] = self.store.try_lock(name, tenant=tenant)
            return lock
        return nullcontext(True)

    async def acquire(self, tenant: str, cid: str, deadline: float
                      ) -> AbstractContextManager[Any]:
        """The store's lock on the conversation, entered (see module docstring).

        Polls ``try_lock`` with exponential backoff until ``deadline``; a store
        without ``try_lock`` falls back to a blocking ``lock`` in the pool.
        """
        if not hasattr(self.store, "try_lock"):
            lock = self.store.lock(cid, tenant=tenant)
            await self.enter(lock)
            return lock
        loop = asyncio.get_running_loop()
        pause = POLL_FIRST
        while True:
            attempt: AbstractContextManager[bool] = self.store.try_lock(
                cid, tenant=tenant)
            if await self.enter(attempt):
                return attempt
            attempt.__exit__(None, None, None)  # not taken: closes a file or returns a conn
            left = deadline - loop.time()
            if left <= 0:
                raise self.busy()
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, POLL_MAX)

    async def enter(self, lock: AbstractContextManager[Any]) -> Any:
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

    async def leave(self, lock: AbstractContextManager[Any]) -> None:
        """``lock.__exit__`` (in the pool for a remote store), even if this task is cancelled."""
        if self.local:
            lock.__exit__(None, None, None)
        else:
            await shielded(asyncio.get_running_loop().run_in_executor(
                self.executor, lock.__exit__, None, None, None))


def is_local(store: PageStore, index: TranscriptIndex) -> bool:
    """True for in-process / local-file stores and indexes with a ``try_lock``."""
    from copage.server.transcript import MemoryIndex, SQLiteIndex
    from copage.stores.inmemory import MemoryStore
    from copage.stores.sqlite import SQLiteStore

    return (isinstance(store, (MemoryStore, SQLiteStore))
            and isinstance(index, (MemoryIndex, SQLiteIndex)))


async def shielded(aw: Any) -> Any:
    """Await ``aw`` to its end even if this task is cancelled meanwhile."""
    fut = asyncio.ensure_future(aw)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        await asyncio.wait([fut])
        raise
