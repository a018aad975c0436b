"""The one "open a conversation": lock, take from the cache, load, or create.

Every front end (the proxy, MCP, LangChain, the Agents SDK session) opens its
conversations here, so there is one answer to "which object is this turn working
on": under the store's lock on the conversation,

1. the cached object (:class:`~copage.session.memcache.MemoryCache`), caught up
   with the store through :meth:`PagedMemory.refresh` when another writer
   committed since (it reads only what was added, not the whole conversation);
2. else the stored conversation, loaded;
3. else, when the caller allows it (``create`` gives the settings), a new one.

The object is *taken* out of the cache while it is used and put back only after
the work succeeded: an operation that raises leaves nothing cached, and the next
use loads the conversation as stored.

:meth:`Conversations.use` is the whole of it as one block. A front end whose turn
outlives one block (the proxy holds the lock from preparing a turn to committing
its answer, across threads and the event loop) takes the steps itself:
:meth:`Conversations.open` with its lock held, then :meth:`Conversations.put` after
its commit. ``create`` is a callable so that the caller's own rules run only when
a conversation would be created (the proxy validates the first request there, or
refuses with its ``Stale`` when it expected an existing conversation); whatever it
raises, nothing is created.

Read-only copies that must not touch the cache (an inspector, a stored response)
come from :func:`read`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from copage.core.config import PagerConfig
from copage.memory import PagedMemory
from copage.session.memcache import DEFAULT_SIZE, MemoryCache, Versioned
from copage.stores.protocol import ConversationNotFound, PageStore

__all__ = ["Conversations", "Create", "Opened", "read"]

Create = Callable[[], PagerConfig]
"""The settings of a conversation about to be created (may raise to refuse it)."""


@dataclass(frozen=True, slots=True)
class Opened:
    """An opened conversation: the object and whether this open created it."""

    mem: PagedMemory
    created: bool


def read(store: PageStore, conversation_id: str, *, tenant: str = "default") -> PagedMemory:
    """A fresh copy of the stored conversation, outside any cache and lock (for reading).

    Raises ``ConversationNotFound`` when absent (never creates it).
    """
    return PagedMemory(store=store, conversation_id=conversation_id, tenant=tenant,
                       create=False)


class Conversations:
    """The open conversations of one store (see module docstring).

    Args:
        store: where the conversations live.
        cache_size: conversations kept open between uses (0: load on every use).
    """

    def __init__(self, store: PageStore, cache_size: int = DEFAULT_SIZE) -> None:
        self.store = store
        self.cache = MemoryCache(store, cache_size)

    def warm(self, tenant: str, conversation_id: str) -> bool:
        """Whether opening needs no full load now: cached, or not stored (so new).

        One indexed row read; call with the lock held for an answer that holds.
        """
        if self.cache.holds(tenant, conversation_id):
            return True
        if isinstance(self.store, Versioned):
            return self.store.version(conversation_id, tenant=tenant) is None
        return not self.store.exists(conversation_id, tenant=tenant)

    def open(self, tenant: str, conversation_id: str, create: Create | None = None) -> Opened:
        """The conversation, current with the store; call with its lock held.

        Cached (caught up), else loaded, else created with ``create()``'s settings;
        ``ConversationNotFound`` when absent and ``create`` is None. The object is
        out of the cache until :meth:`put` (if the caller's work fails, it simply
        does not put it back).
        """
        mem = self.cache.take(tenant, conversation_id)
        if mem is not None:
            return Opened(mem, False)
        try:
            return Opened(read(self.store, conversation_id, tenant=tenant), False)
        except ConversationNotFound:
            if create is None:
                raise
        config = create()
        return Opened(PagedMemory(store=self.store, conversation_id=conversation_id,
                                  tenant=tenant, config=config), True)

    def put(self, mem: PagedMemory) -> None:
        """Keep ``mem`` (its work succeeded: it matches the store) for the next use."""
        self.cache.put(mem)

    def discard(self, tenant: str, conversation_id: str) -> None:
        """Forget a cached conversation (when it is not to be trusted)."""
        self.cache.discard(tenant, conversation_id)

    def delete(self, tenant: str, conversation_id: str, *, locked: bool = False) -> None:
        """Delete a stored conversation and forget its cached copy, under the store's
        lock (``locked=True``: the caller holds it), so a use running on it finishes
        first. Raises ``ConversationNotFound`` when the tenant has no such conversation."""
        lock: AbstractContextManager[Any] = nullcontext() if locked else \
            self.store.lock(conversation_id, tenant=tenant)
        with lock:
            self.discard(tenant, conversation_id)
            self.store.delete_conversation(conversation_id, tenant=tenant)

    @contextmanager
    def opened(self, tenant: str, conversation_id: str, create: Create | None = None,
               ) -> Iterator[PagedMemory]:
        """:meth:`open` for the block, put back if the block succeeds (lock held by the
        caller: use it when the lock is on another name than the conversation)."""
        mem = self.open(tenant, conversation_id, create).mem
        yield mem
        self.put(mem)

    @contextmanager
    def use(self, conversation_id: str, *, tenant: str = "default",
            create: Create | None = None) -> Iterator[PagedMemory]:
        """The conversation, locked for the block (the store's lock on it); put back in
        the cache only if the block succeeds."""
        with self.store.lock(conversation_id, tenant=tenant), \
                self.opened(tenant, conversation_id, create) as mem:
            yield mem
