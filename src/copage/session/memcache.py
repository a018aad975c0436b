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
(every turn loads). The version check assumes versions only grow while a
conversation exists; a conversation deleted *and* re-created elsewhere up to the
same version would not be noticed (the proxy itself deletes only conversations it
has just created and never committed, which are never cached).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol, runtime_checkable

from copage.memory import PagedMemory
from copage.stores.base import PageStore

Key = tuple[str, str]  # (tenant, conversation id)
DEFAULT_SIZE = 256


@runtime_checkable
class Versioned(Protocol):
    """A store that can tell a conversation's version without loading it."""

    def version(self, conversation_id: str, *, tenant: str = "default") -> int | None: ...


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
        with self._mutex:
            mem = self._items.pop((tenant, conversation_id), None)
        if mem is None:
            self.misses += 1
            return None
        assert isinstance(self.store, Versioned)
        stored = self.store.version(conversation_id, tenant=tenant)
        if stored is None:
            self.misses += 1
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
        with self._mutex:
            self._items[key] = mem
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def discard(self, tenant: str, conversation_id: str) -> None:
        """Forget a conversation."""
        with self._mutex:
            self._items.pop((tenant, conversation_id), None)
