"""Functions run in child processes by the store tests (importable by multiprocessing spawn)."""

from __future__ import annotations

from typing import Any

from copage.stores import ChangeSet, open_store


def increment(url: str, conversation_id: str, times: int) -> None:
    """Load-modify-commit the ``counter`` in the state ``times`` times, under the lock."""
    store = open_store(url)
    try:
        for _ in range(times):
            with store.lock(conversation_id):
                conv = store.load(conversation_id)
                counter = int(conv.state.get("counter", 0))
                store.commit(conversation_id, ChangeSet(state={"counter": counter + 1}))
    finally:
        store.close()


def open_and_add(url: str, conversation_id: str, who: int, barrier: Any, results: Any) -> None:
    """Open (or create) one conversation at the same moment as the other workers, then
    add one turn under the conversation lock; put ``(who, "ok")`` or the error on ``results``."""
    from copage import PagedMemory

    store = open_store(url)
    try:
        barrier.wait(60)
        try:
            mem = PagedMemory(store=store, conversation_id=conversation_id,
                              boundary="fixed_2", resident_pages=1)
            with mem.locked():
                mem.add("user", f"hello from worker {who}")
            results.put((who, "ok"))
        except Exception as e:  # noqa: BLE001 - reported to the parent
            results.put((who, f"{type(e).__name__}: {e}"))
    finally:
        store.close()
