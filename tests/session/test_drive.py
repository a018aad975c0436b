"""copage.session.drive: the engine driven without an event loop, a lock held from threads."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import pytest

from copage.session.drive import SuspendedError, in_worker, iterate_sync, run_sync


async def _counting(n: int, closed: list[str]) -> AsyncIterator[int]:
    try:
        for i in range(n):
            yield i
    finally:
        closed.append("closed")


def test_iterate_sync_runs_an_async_generator_that_never_suspends() -> None:
    closed: list[str] = []
    assert list(iterate_sync(_counting(3, closed))) == [0, 1, 2]
    assert closed == ["closed"]


def test_closing_early_closes_the_async_generator() -> None:
    closed: list[str] = []
    it = iterate_sync(_counting(5, closed))
    assert next(it) == 0
    it.close()
    assert closed == ["closed"]


def test_it_works_inside_a_running_event_loop() -> None:
    async def main() -> list[int]:
        return list(iterate_sync(_counting(2, [])))

    assert asyncio.run(main()) == [0, 1]


def test_a_real_suspension_is_a_clear_error() -> None:
    class Wait:  # what awaiting a real future does: yield it to the event loop
        def __await__(self) -> Iterator[str]:
            yield "a future"

    async def sleeper() -> AsyncIterator[int]:
        yield 1
        await Wait()
        yield 2

    it = iterate_sync(sleeper())
    assert next(it) == 1
    with pytest.raises(SuspendedError, match="async API"):
        next(it)


def test_run_sync_returns_the_value_and_raises_the_error() -> None:
    async def value() -> int:
        return 7

    async def fails() -> int:
        raise KeyError("x")

    assert run_sync(value()) == 7
    with pytest.raises(KeyError):
        run_sync(fails())


@contextmanager
def _locked(lock: threading.Lock, log: list[str]) -> Iterator[str]:
    with lock:
        log.append(f"enter {threading.current_thread() is threading.main_thread()}")
        try:
            yield "held"
        finally:
            log.append("exit")


def test_in_worker_enters_and_exits_off_the_loop() -> None:
    lock, log = threading.Lock(), []

    async def main() -> None:
        async with in_worker(_locked(lock, log)) as value:
            assert value == "held" and lock.locked()
        assert not lock.locked()
        with pytest.raises(ValueError):
            async with in_worker(_locked(lock, log)):
                raise ValueError("boom")
        assert not lock.locked()

    asyncio.run(main())
    assert log == ["enter False", "exit", "enter False", "exit"]


def test_a_cancelled_enter_still_releases_the_lock() -> None:
    lock, log = threading.Lock(), []

    async def main() -> None:
        lock.acquire()  # someone else holds it: the worker waits
        task = asyncio.create_task(_use(lock, log))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        lock.release()  # the worker now takes it, and must give it back
        for _ in range(100):
            await asyncio.sleep(0.01)
            if log == ["enter False", "exit"]:
                break

    asyncio.run(main())
    assert log == ["enter False", "exit"] and not lock.locked()


async def _use(lock: threading.Lock, log: list[str]) -> None:
    async with in_worker(_locked(lock, log)):
        raise AssertionError("not reached: cancelled while waiting")


def test_waiting_for_the_lock_does_not_hold_the_loops_executor() -> None:
    """Runs waiting for a conversation's lock must leave the loop's executor to its
    holder: here the holder needs the executor's only worker before it lets go."""
    from concurrent.futures import ThreadPoolExecutor

    lock, log = threading.Lock(), []

    async def run(i: int) -> None:
        async with in_worker(_locked(lock, log)):
            await asyncio.to_thread(lambda: None)  # a sync model call in the executor

    async def main() -> None:
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(1))
        await asyncio.wait_for(asyncio.gather(*(run(i) for i in range(4))), 10)

    asyncio.run(main())
    assert log == ["enter False", "exit"] * 4 and not lock.locked()
