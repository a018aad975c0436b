"""Functions run in child processes by the store tests (importable by multiprocessing spawn)."""

from __future__ import annotations

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
