"""Driving the recall engine from callers that are not plain asyncio code.

:func:`iterate_sync` runs an async iterator whose awaits never truly suspend (the
engine, :func:`copage.session.engine.run_recall_loop`, fed by a caller that calls a
blocking model function) from synchronous code, without an event loop: each step
of the coroutine is sent ``None`` until it returns. That works inside a running
event loop too (nothing is scheduled on it). A step that does suspend (awaits a
real future) is an error: such an iterator needs an event loop.

:func:`in_worker` enters and exits a blocking context manager (a store's lock on a
conversation) in threads of their own, so an async caller can hold it across awaits
without blocking its event loop; an enter that is cancelled is still exited. Not the
loop's executor: callers waiting for the lock would hold its workers, and the lock's
holder may need one (a sync chat model runs there) before it lets go.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, asynccontextmanager
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["SuspendedError", "in_thread", "in_worker", "iterate_sync", "run_sync"]


class SuspendedError(RuntimeError):
    """An awaitable driven by :func:`run_sync` waited on something (needs an event loop)."""


def run_sync(awaitable: Awaitable[T]) -> T:
    """The result of an awaitable that never suspends, computed without an event loop.

    Raises:
        SuspendedError: the awaitable waited on a future (the error is raised in it
            where it waited, then here).
    """
    step = awaitable.__await__()
    try:
        waited = step.send(None)
    except StopIteration as done:
        value: T = done.value
        return value
    error = SuspendedError(
        f"an awaitable driven synchronously waited on {waited!r}; "
        "use the async API (in an event loop) for callers that await real I/O")
    try:  # raised where it waited, so that its cleanup runs
        step.throw(error)
    except StopIteration:
        pass
    raise error


def iterate_sync(events: AsyncIterator[T]) -> Iterator[T]:
    """Iterate an async iterator whose steps never suspend (see :func:`run_sync`);
    closing the iterator early closes ``events`` (its cleanup must not suspend either)."""
    finished = False
    try:
        while True:
            try:
                item = run_sync(events.__anext__())
            except StopAsyncIteration:
                finished = True
                return
            yield item
    finally:
        aclose = getattr(events, "aclose", None)
        if not finished and aclose is not None:
            run_sync(aclose())


def _in_thread(loop: asyncio.AbstractEventLoop, fn: Callable[..., T], *args: Any
               ) -> asyncio.Future[T]:
    """``fn(*args)`` in a thread of its own (not the loop's executor, whose workers
    may all be needed by the lock's holder), with the caller's context variables."""
    fut: asyncio.Future[T] = loop.create_future()
    ctx = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if fut.cancelled():
            return
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(value)

    def run() -> None:
        try:
            value, error = ctx.run(fn, *args), None
        except BaseException as e:  # noqa: BLE001 (handed to the awaiting task)
            value, error = None, e
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    threading.Thread(target=run, name="copage-worker", daemon=True).start()
    return fut


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` awaited from a thread of its own (not the loop's executor: a caller
    that waits there for a conversation's lock must not hold a worker its holder needs)."""
    return await _in_thread(asyncio.get_running_loop(), fn, *args)


@asynccontextmanager
async def in_worker(cm: AbstractContextManager[T]) -> AsyncIterator[T]:
    """``cm`` entered and exited in threads of their own (waiting for it there, not on
    the event loop, nor in the loop's executor).

    An enter whose awaiting task is cancelled is exited as soon as it completes, so a
    lock taken by the thread is never left held.
    """
    loop = asyncio.get_running_loop()
    entering = _in_thread(loop, cm.__enter__)
    try:
        value: T = await asyncio.shield(entering)
    except asyncio.CancelledError:
        def undo(f: asyncio.Future[Any]) -> None:
            if not f.cancelled() and f.exception() is None:
                _in_thread(loop, cm.__exit__, None, None, None)

        entering.add_done_callback(undo)
        raise
    try:
        yield value
    except BaseException as e:
        await asyncio.shield(_in_thread(loop, cm.__exit__, type(e), e, e.__traceback__))
        raise
    await asyncio.shield(_in_thread(loop, cm.__exit__, None, None, None))
