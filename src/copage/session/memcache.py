"""A bounded per-worker cache of open conversations (``PagedMemory`` objects).

Rebuilding a pager from the store re-reads and re-tokenises every turn and
rebuilds the keyword corpus: O(conversation length) per request. A worker keeps
the conversations it served recently and, under the store's per-conversation
lock, only compares the stored version with the cached one (one indexed row
read); when another worker (or any other writer) committed in between, it reads
and processes only what was added since (:meth:`PagedMemory.refresh`). A turn *takes* its conversation out of the cache and puts it back only
after a successful commit, so a failed turn can never leave a half-changed
object behind: the next turn loads the conversation from the store.

Stores without a ``version(conversation_id, tenant=...)`` method get no caching
(every turn loads). Versions only grow while a conversation exists, but a deleted
conversation re-created under the same id starts again at 0, so a store with a
``stamp`` method (``(version, created_at)``, one row read like ``version``) is
asked that instead: a cached copy of an earlier conversation of that id is never
taken for the new one, whatever its version (deleting a conversation in one
worker leaves it cached in the others until they next touch it).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol, runtime_checkable

from copage.memory import PagedMemory
from copage.stores.protocol import PageStore

Key = tuple[str, str]  # (tenant, conversation id)
DEFAULT_SIZE = 256


@runtime_checkable
class Versioned(Protocol):
    """A store that can tell a conversation's version without loading it."""

    def version(self, conversation_id: str, *, tenant: str = "default") -> int | None: ...


@runtime_checkable
class Stamped(Protocol):
    """A store that also tells when the conversation of that id was created."""

    def stamp(self, conversation_id: str, *, tenant: str = "default"
              ) -> tuple[int, float] | None: ...


class MemoryCache:
    """LRU of ``PagedMemory`` by (tenant, conversation id), at most ``size`` entries.

    Thread-safe; ``size=0`` disables caching.
    """

    def __init__(self, store: PageStore, size: int = DEFAULT_SIZE) -> None:
        if size < 0:
            raise ValueError(f"cache size must be >= 0, got {size}")
        self.store = store
        self.size = size if isinstance(store, Versioned) else 0
        self._items: OrderedDict[Key, PagedMemory] = OrderedDict()
        #: created_at of the conversation each cached (or taken) object belongs to.
        self._born: dict[Key, float] = {}
        self._mutex = threading.Lock()
        self.hits = self.reloads = self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def holds(self, tenant: str, conversation_id: str) -> bool:
        """Whether the conversation is cached now."""
        return (tenant, conversation_id) in self._items

    def take(self, tenant: str, conversation_id: str) -> PagedMemory | None:
        """The cached conversation, current with the store, removed from the cache.

        Call with the store's lock on the conversation held. None when it is not
        cached or no longer exists (the caller then loads or creates it).
        """
        key = (tenant, conversation_id)
        with self._mutex:
            mem = self._items.pop(key, None)
        if mem is None:
            self.misses += 1
            return None
        if isinstance(self.store, Stamped):
            found = self.store.stamp(conversation_id, tenant=tenant)
            stored = None if found is None else found[0]
            if found is not None and found[1] != self._born.get(key):
                stored = None  # another conversation of the same id
        else:
            assert isinstance(self.store, Versioned)
            stored = self.store.version(conversation_id, tenant=tenant)
        if stored is None:
            self.misses += 1
            self._born.pop(key, None)
            return None
        if stored != mem.version:
            self.reloads += 1
            mem.refresh()
        else:
            self.hits += 1
        return mem

    def put(self, mem: PagedMemory) -> None:
        """Keep ``mem`` (just committed, matching the store) for the next turn."""
        if self.size == 0:
            return
        key = (mem.tenant, mem.conversation_id)
        if key not in self._born and isinstance(self.store, Stamped):
            found = self.store.stamp(mem.conversation_id, tenant=mem.tenant)
            if found is None:
                return
            self._born[key] = found[1]
        with self._mutex:
            self._items[key] = mem
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                old, _ = self._items.popitem(last=False)
                self._born.pop(old, None)

    def discard(self, tenant: str, conversation_id: str) -> None:
        """Forget a conversation."""
        with self._mutex:
            self._items.pop((tenant, conversation_id), None)
            self._born.pop((tenant, conversation_id), None)
