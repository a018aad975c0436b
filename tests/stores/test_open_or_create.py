"""Opening a new conversation id is atomic in every store (issue 11, defect 1).

Several openers of the same new id at once (processes on SQLite files and the real
PostgreSQL, threads on the memory store) all get the one conversation: one creates
it, the others load it; none sees ``ConversationExists``.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
from typing import Any

from store_helpers import StoreFactory
from store_workers import open_and_add

WORKERS = 4


def _run_threads(stores: StoreFactory, cid: str) -> list[tuple[int, str]]:
    from copage import PagedMemory

    store = stores.open()
    barrier = threading.Barrier(WORKERS)
    results: queue.Queue[tuple[int, str]] = queue.Queue()

    def work(who: int) -> None:
        barrier.wait(60)
        try:
            mem = PagedMemory(store=store, conversation_id=cid, boundary="fixed_2",
                              resident_pages=1)
            with mem.locked():
                mem.add("user", f"hello from worker {who}")
            results.put((who, "ok"))
        except Exception as e:  # noqa: BLE001 - reported to the test
            results.put((who, f"{type(e).__name__}: {e}"))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return [results.get_nowait() for _ in range(WORKERS)]


def _run_processes(stores: StoreFactory, cid: str) -> list[tuple[int, str]]:
    ctx = multiprocessing.get_context("spawn")
    barrier: Any = ctx.Barrier(WORKERS)
    results: Any = ctx.Queue()
    procs = [ctx.Process(target=open_and_add, args=(stores.url, cid, i, barrier, results))
             for i in range(WORKERS)]
    for p in procs:
        p.start()
    out = [results.get(timeout=180) for _ in range(WORKERS)]
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * WORKERS
    return out


def test_concurrent_open_of_a_new_id_gives_everyone_the_one_conversation(
    stores: StoreFactory,
) -> None:
    from copage import PagedMemory

    for attempt in range(3):  # three fresh ids: three chances for the race to bite
        cid = f"race-{attempt}"
        run = _run_processes if stores.persistent else _run_threads
        results = sorted(run(stores, cid))
        assert results == [(i, "ok") for i in range(WORKERS)]
        mem = PagedMemory(store=stores.open(), conversation_id=cid, create=False)
        assert sorted(t.text for t in mem.turns) == [f"hello from worker {i}" for i in range(WORKERS)]
        assert mem.version == WORKERS
        assert [c.id for c in stores.open().list_conversations()].count(cid) == 1
