"""Open conversations by (tenant, id), shared by the adapters.

Every use holds the store's lock on the conversation and works on its latest
stored state: the shared :class:`~copage.session.memcache.MemoryCache` (also the proxy's) keeps
recently used conversations and reloads one only when another writer committed.
An operation that raises leaves nothing cached (the next use reloads).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from copage.core.config import PagerConfig
from copage.memory import PagedMemory
from copage.session.memcache import DEFAULT_SIZE, MemoryCache
from copage.stores import open_store
from copage.stores.base import ConversationNotFound, PageStore


class ConversationPool:
    """Paged conversations of one store; new ones get ``config``.

    Args:
        store: a :class:`PageStore` or a store URL (``memory://`` when None).
        config: paging settings of conversations created here.
        cache_size: open conversations kept in memory (0: load on every use).
    """

    def __init__(self, store: PageStore | str | None = None, config: PagerConfig | None = None,
                 *, cache_size: int = DEFAULT_SIZE) -> None:
        if store is None or isinstance(store, str):
            store = open_store(store or "memory://")
        self.store: PageStore = store
        self.config = config or PagerConfig()
        self.cache = MemoryCache(self.store, cache_size)

    @contextmanager
    def use(self, conversation_id: str, *, tenant: str = "default",
            create: bool = False) -> Iterator[PagedMemory]:
        """The conversation, locked for the block; ``ConversationNotFound`` if absent
        and ``create`` is false."""
        with self.store.lock(conversation_id, tenant=tenant):
            mem = self.cache.take(tenant, conversation_id)
            if mem is None:
                mem = self._open(conversation_id, tenant, create)
            yield mem
            self.cache.put(mem)

    def _open(self, conversation_id: str, tenant: str, create: bool) -> PagedMemory:
        try:
            return PagedMemory(store=self.store, conversation_id=conversation_id, tenant=tenant,
                               create=False)
        except ConversationNotFound:
            if not create:
                raise
        return PagedMemory(store=self.store, conversation_id=conversation_id, tenant=tenant,
                           config=self.config)

    def forget(self, conversation_id: str, *, tenant: str = "default") -> None:
        """Drop a cached conversation (after deleting it from the store)."""
        self.cache.discard(tenant, conversation_id)

    def close(self) -> None:
        """Close the store."""
        self.store.close()
