"""Running coroutines from synchronous code without leaking HTTP clients.

SDK clients (``openai``, ``anthropic``: httpx underneath) are bound to the event
loop that created them. ``asyncio.run`` per synchronous call would build a new
loop, hence a new client and new sockets, every time, and nothing closes the old
ones (300 ``send_sync`` turns left 301 sockets open). So:

* :func:`run_sync` runs every synchronous call on **one** long-lived event loop
  in a daemon thread (``copage-sync``): each model keeps one client there and
  its keep-alive connections are reused across calls.
* :func:`run_in_thread` (for synchronous code that is itself called from inside
  a running loop, such as keyword generators called by the pager during an
  ``await chat.send(...)``) runs a fresh loop in a worker thread and closes every
  client opened on it before the loop ends (:func:`close_loop_resources`).

Network models register their per-loop clients with :func:`on_loop_close`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger("copage.llm")
Closer = Callable[[], Awaitable[None]]

# Weak references: registering must not keep a discarded model (and its client) alive.
_closers: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, list[weakref.WeakMethod[Closer]]
] = weakref.WeakKeyDictionary()
_guard = threading.Lock()
_shared: _LoopThread | None = None


class _LoopThread:
    """An event loop running forever in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(
            target=self._main, args=(ready,), name="copage-sync", daemon=True
        )
        self.thread.start()
        ready.wait()

    def _main(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    def alive(self) -> bool:
        return self.thread.is_alive() and not self.loop.is_closed()


def _runner() -> _LoopThread:
    global _shared
    with _guard:
        if _shared is None or not _shared.alive():
            _shared = _LoopThread()
        return _shared


def _after_fork() -> None:  # the thread does not exist in a forked child
    global _shared, _guard
    _shared = None
    _guard = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code and return its result.

    It runs on the shared ``copage-sync`` loop (see the module docstring), in a
    copy of the caller's context variables. Fails clearly when called inside a
    running event loop (use ``await`` there). Ctrl-C cancels the coroutine.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()
        raise RuntimeError("a *_sync() method was called inside a running event loop; use 'await'")
    runner = _runner()
    done: concurrent.futures.Future[T] = concurrent.futures.Future()
    box: dict[str, asyncio.Task[T]] = {}

    def start() -> None:
        task = runner.loop.create_task(coro)
        box["task"] = task

        def finish(t: asyncio.Task[T]) -> None:
            if t.cancelled():
                done.cancel()
            elif (exc := t.exception()) is not None:
                done.set_exception(exc)
            else:
                done.set_result(t.result())

        task.add_done_callback(finish)

    runner.loop.call_soon_threadsafe(start, context=contextvars.copy_context())
    try:
        return done.result()
    except concurrent.futures.CancelledError:
        raise asyncio.CancelledError() from None
    except BaseException:
        if not done.done():  # interrupted while waiting (Ctrl-C): stop the work too
            runner.loop.call_soon_threadsafe(lambda: box["task"].cancel() if box else None)
        raise


def on_loop_close(loop: asyncio.AbstractEventLoop, closer: Closer) -> None:
    """Register the bound method ``closer`` to run when :func:`close_loop_resources` runs
    on ``loop`` (held weakly: an object that is garbage collected is simply skipped)."""
    _closers.setdefault(loop, []).append(weakref.WeakMethod(closer))


async def close_loop_resources() -> None:
    """Close every resource registered for the running loop (errors are ignored)."""
    closers = _closers.pop(asyncio.get_running_loop(), [])
    for ref in closers:
        close = ref()
        if close is None:
            continue
        try:
            await close()
        except Exception as e:  # noqa: BLE001 - closing is best effort
            log.debug("closing a client failed: %s", e)


async def _closing(coro: Coroutine[Any, Any, T]) -> T:
    try:
        return await coro
    finally:
        await close_loop_resources()


def run_in_thread(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on a fresh loop in a worker thread, closing the clients it opened.

    For synchronous code that may itself run inside an event loop; from plain
    synchronous code prefer :func:`run_sync`.
    """
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["out"] = asyncio.run(_closing(coro))
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["err"] = e

    t = threading.Thread(target=work, name="copage-worker")
    t.start()
    t.join()
    if "err" in box:
        raise box["err"]
    return box["out"]  # type: ignore[no-any-return]


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """:func:`run_sync` when no loop runs in this thread, else :func:`run_in_thread`."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run_sync(coro)
    return run_in_thread(coro)
