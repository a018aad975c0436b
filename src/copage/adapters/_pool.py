"""Open conversations by (tenant, id), shared by the adapters.

A thin holder of a store, the settings of new conversations and the one opener,
:class:`~copage.session.opening.Conversations` (lock, take from the shared
cache caught up through ``PagedMemory.refresh``, load, or create; an operation
that raises leaves nothing cached).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from copage.core.config import PagerConfig
from copage.memory import PagedMemory
from copage.session.memcache import DEFAULT_SIZE, MemoryCache
from copage.session.opening import Conversations
from copage.stores import open_store
from copage.stores.protocol import PageStore


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
        self.conversations = Conversations(self.store, cache_size)

    @property
    def cache(self) -> MemoryCache:
        """The open conversations kept between uses."""
        return self.conversations.cache

    @contextmanager
    def use(self, conversation_id: str, *, tenant: str = "default",
            create: bool = False) -> Iterator[PagedMemory]:
        """The conversation, locked for the block; ``ConversationNotFound`` if absent
        and ``create`` is false."""
        with self.conversations.use(conversation_id, tenant=tenant,
                                    create=self._config if create else None) as mem:
            yield mem

    def _config(self) -> PagerConfig:
        return self.config

    def delete(self, conversation_id: str, *, tenant: str = "default") -> None:
        """Delete a conversation from the store and the cache (``ConversationNotFound``
        if absent)."""
        self.conversations.delete(tenant, conversation_id)

    def close(self) -> None:
        """Close the store."""
        self.store.close()
