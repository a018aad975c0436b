"""PagedMemory: a pager joined to a store, the library's main entry point."""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TextIO, TypeVar

from copage.core.changes import ChangeSet
from copage.core.config import PagerConfig
from copage.core.pager import Context, Pager, RecallResult
from copage.core.registry import UnknownNameError
from copage.core.shrink import shrink
from copage.core.types import PageId, ToolCall, Turn
from copage.memory_reads import MemoryReads, SearchHit  # noqa: F401 - SearchHit: its public path
from copage.stores.protocol import ConversationExists, ConversationNotFound, PageStore, StoreError
from copage.undo import UndoLog, pop_turn

ROLES = ("user", "assistant", "tool", "system")
_T = TypeVar("_T")


class MemoryOutOfSync(StoreError):
    """A failed change could not be rolled back by reloading the stored state.

    The object refuses further work (every call raises this) until :meth:`PagedMemory.reload`
    succeeds or the conversation is opened again: nothing unstored is ever shown or
    built upon.
    """


_OPEN_ATTEMPTS = 5  # open-or-create retries when another process creates or deletes meanwhile


def new_conversation_id() -> str:
    """An unguessable conversation id (128 random bits)."""
    return "c_" + secrets.token_urlsafe(16)


class PagedMemory(MemoryReads):
    """A paged conversation, persisted in a :class:`PageStore` after every change.

    Create one with paging settings (a new conversation), or reopen one with its
    store and ``conversation_id`` (its stored settings are used)::

        mem = PagedMemory(boundary="fixed_10", policy="lru", resident_pages=5,
                          store="sqlite:///chat.db", conversation_id="alice")
        mem.add("user", "I'm allergic to peanuts.")
        ctx = mem.context()          # ctx.messages, ctx.tools
        text = mem.recall("p3")      # the recall tool

    Each call that changes the conversation commits one atomic change to the store
    before it returns: an acknowledged turn is never lost. A call that fails leaves
    the object exactly as stored (it reloads); if even the reload fails, the object
    raises :class:`MemoryOutOfSync` on every call until :meth:`reload` succeeds.
    Opening is atomic: processes that open the same new id at once all get the one
    conversation (one creates it, the others load it).

    Args:
        store: a :class:`PageStore`, a store URL (``memory://``, ``sqlite:///path``,
            ``postgresql://...``) or None for an in-memory store.
        conversation_id: id within the tenant; a new unguessable id if None.
        tenant: the owner of the conversation.
        config: a full :class:`PagerConfig` instead of the individual settings.
        clock: time source for stored timestamps (``time.time``).
        create: False to only open an existing conversation (``ConversationNotFound``
            if it is absent) instead of creating it.
        **settings: any :class:`PagerConfig` field (``boundary``, ``policy``,
            ``budget_tokens`` (the default paging), ``resident_pages`` or
            ``resident_tokens``, ``keywords``, ``n_keywords``,
            ``bookmark_format``, ...).
    """

    def __init__(
        self, *, store: PageStore | str | None = None, conversation_id: str | None = None,
        tenant: str = "default", config: PagerConfig | None = None,
        clock: Callable[[], float] = time.time, create: bool = True, **settings: Any,
    ) -> None:
        from copage.stores import open_store

        if store is None:
            store = "memory://"
        self.store: PageStore = open_store(store) if isinstance(store, str) else store
        self.tenant = tenant
        self.clock = clock
        self.conversation_id = conversation_id or new_conversation_id()
        if config is not None and settings:
            raise ValueError("give either config= or individual settings, not both")
        if config is None:
            config = PagerConfig(**settings) if settings else None
        self._deferred = False
        self._broken: str | None = None
        self._idset: set[str] | None = None
        self._undo = UndoLog()  # how to take back the latest commit (pop_turn)
        self._open(config, create)

    def _open(self, config: PagerConfig | None, create: bool) -> None:
        """Load the conversation, or create it: atomically, whatever other processes do.

        Creation is one conditional insert in the store (``ConversationExists`` if taken);
        losing that race means someone else just created it, so it is loaded instead.
        """
        cid, tenant = self.conversation_id, self.tenant
        for _ in range(_OPEN_ATTEMPTS):
            if self.store.exists(cid, tenant=tenant):
                try:
                    self._load(expect=config)
                    return
                except ConversationNotFound:
                    continue  # deleted between the two calls: look again
            if not create:
                raise ConversationNotFound(
                    f"conversation {cid!r} of tenant {tenant!r} not found")
            pager = Pager(config or PagerConfig())
            try:
                self.store.create_conversation(
                    cid, pager.config.to_dict(), tenant=tenant, now=self.clock())
            except ConversationExists:
                continue  # another opener created it first: load theirs
            self.pager, self.version, self._idset = pager, 0, None
            self._undo.created()
            return
        raise StoreError(
            f"conversation {cid!r} of tenant {tenant!r} was created and deleted "
            f"{_OPEN_ATTEMPTS} times while opening it; try again")

    # ----------------------------------------------------------------- state
    def _load(self, expect: PagerConfig | None = None) -> None:
        conv = self.store.load(self.conversation_id, tenant=self.tenant)
        held = expect if expect is not None else getattr(getattr(self, "pager", None), "config", None)
        stored = PagerConfig.from_dict(conv.config, like=held)  # names in the same registries
        if expect is not None and expect != stored:
            raise ValueError(
                f"conversation {self.conversation_id!r} exists with other settings "
                f"({_diff(stored, expect)}); reopen it without settings"
            )
        self.pager = Pager.restore(stored, conv.turns, conv.pages, conv.bookmarks, conv.state,
                                   page_state=conv.page_state)
        self.version = conv.version
        self._idset = None
        self._broken = None
        self._undo.loaded(conv)

    def reload(self) -> None:
        """Re-read the conversation from the store, dropping what this object holds.

        Use it after another writer (process, thread or object) changed the
        conversation (a commit then fails with ``VersionConflict``), or to recover an
        object that raised :class:`MemoryOutOfSync`. Raises the store's error if the
        store cannot be read; the object then stays refused.
        """
        self._load()

    def refresh(self) -> None:
        """Catch up with the store after another writer committed.

        Reads and processes only what was added since this object's version (the
        turns and pages after its own, and the bookmarks and page states rewritten
        since, with the store's ``load_since`` when it has one), so the cost does not
        grow with the conversation; a stored conversation
        that is not this one grown (other settings, fewer turns, another latest turn
        than ours) is reloaded in full, as is a refused object. Errors as :meth:`reload`.
        """
        if self._broken is not None or not self.pager.turns:
            self._load()
            return
        base = self.pager
        n_turns, n_pages = len(base.turns), len(base.pages)
        since = getattr(self.store, "load_since", None)
        if since is not None:
            # Only what was added or rewritten after our version: the bookmarks and page
            # states written since complete those this object holds (see Pager.restore).
            conv = since(self.conversation_id, tenant=self.tenant, turns_from=n_turns - 1,
                         pages_from=n_pages, since_version=self.version)
            new, pages = conv.turns, conv.pages
        else:
            conv = self.store.load(self.conversation_id, tenant=self.tenant)
            new, pages = conv.turns[n_turns - 1:], [p for p in conv.pages if p.index >= n_pages]
        config = PagerConfig.from_dict(conv.config, like=base.config)
        if not new or new[0] != base.turns[-1] or config != base.config:
            self._load()  # not this conversation grown: start over
            return
        try:
            self.pager = Pager.restore(config, [*base.turns, *new[1:]], pages, conv.bookmarks,
                                       conv.state, base=base, page_state=conv.page_state)
        except Exception:  # noqa: BLE001 - any mismatch: the full load is always right
            self._load()
            return
        self.version = conv.version
        self._undo.refreshed(conv)
        if self._idset is not None:
            self._idset.update(t.id for t in new[1:])

    def _live(self) -> None:
        if self._broken is not None:
            raise MemoryOutOfSync(
                f"conversation {self.conversation_id!r}: {self._broken}; this object no longer "
                "matches the store and refuses further work: call reload() or reopen it")

    def _rollback(self, failure: BaseException) -> None:
        """After a failed operation, go back to the stored state; if even that fails,
        refuse further work (the unstored change must not be shown or built upon)."""
        try:
            self.pager.discard()
            self._load()
        except BaseException as e:  # noqa: BLE001 - any failure to reload leaves it refused
            self._broken = (
                f"a change failed ({type(failure).__name__}: {failure}) and reloading the "
                f"stored state failed too ({type(e).__name__}: {e})")
            raise MemoryOutOfSync(self._broken) from failure

    @contextmanager
    def _applying(self) -> Iterator[None]:
        """Run one pager operation; if it fails, the pager goes back to the stored state
        (inside :meth:`transaction`, the transaction's own rollback does that)."""
        self._live()
        try:
            yield
        except BaseException as e:
            if not self._deferred:
                self._rollback(e)
            raise

    def _apply(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """One pager operation, applied (:meth:`_applying`) and stored (:meth:`_commit`)."""
        self._undo.plain = False
        with self._applying():
            out = fn(*args, **kwargs)
        self._commit()
        return out

    def _commit(self, change: ChangeSet | None = None) -> None:
        if self._deferred:
            return  # inside transaction(): stored once at its end
        if change is None:
            change = self.pager.drain()
        try:
            self.version = self.store.commit(
                self.conversation_id, change, tenant=self.tenant,
                expected_version=self.version, now=self.clock(),
            )
        except BaseException as e:
            # Leave memory as the store has it: the failed operation did not happen.
            self._rollback(e)
            raise
        self._undo.committed(change, self.pager, self.version)

    @contextmanager
    def transaction(self) -> Iterator[PagedMemory]:
        """Defer commits: what is done inside is stored as one change at the end, or not at all.

        On an exception the pending changes are dropped and the conversation is
        reloaded from the store, so memory and store stay as they were before.
        """
        self._live()
        if self._deferred:
            raise RuntimeError("PagedMemory.transaction() cannot be nested")
        self._deferred = True
        try:
            yield self
        except BaseException as e:
            self._deferred = False
            self._rollback(e)
            raise
        self._deferred = False
        self._commit()

    @contextmanager
    def locked(self) -> Iterator[PagedMemory]:
        """Work on the conversation's latest state while no other writer can change it.

        Takes the store's exclusive lock on this conversation (across processes for
        SQLite and PostgreSQL, across threads for the memory store), reloads the
        stored state, and holds the lock for the block: several processes that each
        do ``with mem.locked(): mem.add(...)`` never conflict. Without it, a commit
        after another writer's raises ``VersionConflict`` (then :meth:`reload`).
        """
        with self.store.lock(self.conversation_id, tenant=self.tenant):
            self._load()
            yield self

    # ---------------------------------------------------------- conversation
    def add(self, role: str, text: str, **meta: Any) -> str:
        """Append a turn and return its id; commits before returning.

        ``meta`` may hold ``id``, ``speaker``, ``timestamp``, ``session``,
        ``tool_calls`` (ToolCall objects or OpenAI-format dicts), ``tool_call_id``,
        and anything JSON-serialisable. A ``system`` turn sets the pinned system
        prompt (kept outside the pages) and returns ``"system"``.
        """
        self._live()
        if role not in ROLES:
            raise UnknownNameError("role", role, ROLES)
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(f"text is not valid Unicode (lone surrogate at {e.start})") from None
        if role == "system":
            self._undo.plain = False
            with self._applying():
                self.pager.set_system(text)
            self._commit()
            return "system"
        ids = self._ids()
        if meta.get("id") is None:
            meta = {**meta, "id": _fresh_id(len(self.pager.turns), ids)}
        turn = _make_turn(role, text, len(self.pager.turns), meta)
        if turn.id in ids:
            raise ValueError(f"duplicate turn id {turn.id!r}")
        with self._applying():
            self.pager.add(turn)
        ids.add(turn.id)  # keeps the cached id set in step
        self._commit()
        return turn.id

    def _ids(self) -> set[str]:
        """Ids of the turns (rebuilt after every load)."""
        if self._idset is None or len(self._idset) != len(self.pager.turns):
            self._idset = {t.id for t in self.pager.turns}
        return self._idset

    def pop_turn(self) -> Turn | None:
        """Remove the latest turn and return it, in one commit whose cost does not grow
        with the conversation: when it is in the open page (O(1)), or when it closed its
        page in this object's latest commit, which only added turns (that commit is
        taken back: the state stored before it, its other turns added again). None, with
        nothing changed, when there is no turn or neither holds (the latest turn is on a
        closed page that this object did not just close: then only a rebuild of the
        conversation removes it)."""
        return pop_turn(self)

    def close_page(self) -> list[PageId]:
        """Close the open page now (e.g. at the end of a session)."""
        return self._apply(self.pager.close_open_page)

    def refresh_bookmarks(self) -> None:
        """Recompute every bookmark with the whole conversation known (the extractor's
        batch mode, as ``copage simulate``'s placement "end" does), and store them."""
        self._apply(self.pager.refresh_all_bookmarks)

    def context(self, question: str | None = None, *, meter: bool = True) -> Context:
        """Messages and tools for the next model call (see :meth:`Pager.context`;
        ``meter=False``: the caller meters what it sends with :meth:`meter_request`)."""
        self._live()
        return self.pager.context(question, meter=meter)

    def meter_request(self, messages: Sequence[Mapping[str, Any]],
                      tools: Sequence[Mapping[str, Any]], question: str | None = None,
                      *, follow_up: bool = False, system_prompt: str | None = None) -> None:
        """Count the request as it is sent in ``stats().prompt_cache`` (after a prompt
        style or a speculative fill changed it; ``follow_up``: a later request of the
        same turn, after a recall; ``system_prompt``: the caller's own, sent with it):
        see :meth:`Pager.meter_request`."""
        self._live()
        self.pager.meter_request(messages, tools, question, follow_up=follow_up,
                                 system_prompt=system_prompt)

    def recall(self, page: object = None, *, query: object = None) -> str:
        """The recall tool: pages the page in and returns the text for the model (errors
        as text, never raised). The same as :meth:`page_in`; :meth:`read_page` only reads."""
        return self.recall_result(page, query=query).text

    def page_in(self, page: object = None, *, query: object = None) -> str:
        """Page ``page`` (or the evicted page best matching ``query``) back in, as the
        recall tool does: it becomes resident, counts as a fault and is stored so;
        returns the framed text the model is given (errors as text, never raised)."""
        return self.recall(page, query=query)

    def read_page(self, page: object) -> str:
        """A closed page's text, framed as the recall tool frames it, without paging it
        in or changing anything (read-only, like MCP's ``recall_page``); ``KeyError``
        if there is no such page."""
        from copage.core.prompt import page_block

        pg = self.page(page)
        return page_block(pg.id, pg.turns)

    def recall_result(self, page: object = None, *, query: object = None) -> RecallResult:
        """Like :meth:`recall`, with the status and page id."""
        return self._apply(self.pager.recall, page, query=query)

    def access(self, page: PageId, *, protect: Collection[PageId] = (),
               kind: str = "probe") -> bool:
        """Record a use of a page (a probe that needs it); pages it in if evicted.

        ``protect``: pages the eviction must not pick; ``kind``: the access's kind in
        the event log and counts (``probe``, ``speculative``, ...)."""
        return self._apply(self.pager.access, page, protect=protect, kind=kind)

    def shrink(self, tokens: int) -> list[PageId]:
        """Evict pages until the resident ones hold at most ``tokens`` (core/shrink.py)."""
        return self._apply(shrink, self.pager, tokens)

    def note(self, kind: str, page: PageId | None, detail: dict[str, Any] | None = None) -> None:
        """Record an event made outside the pager (e.g. ``speculative`` by the chat loop)."""
        self._apply(self.pager.note, kind, page, detail)

    def pager_for_change(self) -> Pager:
        """The pager, for a change made to it directly and not stored (the benchmark's
        probes and policy clocks, :mod:`copage.eval.methods.probe_driver`): checks the object is in
        step with the store, and the latest commit can no longer be taken back."""
        self._live()
        self._undo.plain = False
        return self.pager

    def has_turn(self, turn_id: str) -> bool:
        """Whether a turn with this id is stored (a set lookup)."""
        self._live()
        return turn_id in self._ids()

    # ------------------------------------------------------------ transfer
    def export_jsonl(self, file: str | os.PathLike[str] | TextIO) -> int:
        """Write this conversation, as stored, to ``file`` (a path or a text file) as JSON
        Lines (see :mod:`copage.stores.transfer`); return the lines written."""
        from copage.stores.transfer import export_conversation

        self._live()
        if isinstance(file, (str, os.PathLike)):
            with open(file, "w", encoding="utf-8") as out:
                return export_conversation(self.store, self.conversation_id, out,
                                           tenant=self.tenant)
        return export_conversation(self.store, self.conversation_id, file, tenant=self.tenant)

    @classmethod
    def import_jsonl(
        cls, file: str | os.PathLike[str] | TextIO, *, store: PageStore | str,
        conversation_id: str | None = None, tenant: str = "default", replace: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> PagedMemory:
        """Store a conversation exported by :meth:`export_jsonl` in ``store`` (under its own
        id unless ``conversation_id`` is given) and open it. The whole file is checked
        first and written in one transaction: a bad file (``BadExport``, naming the line)
        writes nothing. An existing conversation of that id raises ``ConversationExists``
        unless ``replace``."""
        from copage.stores import open_store
        from copage.stores.transfer import import_conversation

        target = open_store(store) if isinstance(store, str) else store
        if isinstance(file, (str, os.PathLike)):
            with open(file, encoding="utf-8") as src:
                cid = import_conversation(target, src, source=str(file),
                                          conversation_id=conversation_id, tenant=tenant,
                                          replace=replace)
        else:
            cid = import_conversation(target, file, source=getattr(file, "name", "<file>"),
                                      conversation_id=conversation_id, tenant=tenant,
                                      replace=replace)
        return cls(store=target, conversation_id=cid, tenant=tenant, clock=clock, create=False)


def _make_turn(role: str, text: str, seq: int, meta: dict[str, Any]) -> Turn:
    meta = dict(meta)
    calls = tuple(_tool_call(c) for c in meta.pop("tool_calls", None) or ())
    session = meta.pop("session", None)
    return Turn(
        id=str(meta.pop("id", None) or f"t{seq + 1}"), role=role, text=text,
        speaker=meta.pop("speaker", None), timestamp=meta.pop("timestamp", None),
        session=int(session) if session is not None else None, tool_calls=calls,
        tool_call_id=meta.pop("tool_call_id", None), meta=meta,
    )


def _fresh_id(seq: int, taken: set[str]) -> str:
    """``t<seq+1>``, or with a suffix if a caller-supplied id already holds it."""
    tid, n = f"t{seq + 1}", 2
    while tid in taken:
        tid, n = f"t{seq + 1}.{n}", n + 1
    return tid


def _tool_call(c: ToolCall | dict[str, Any]) -> ToolCall:
    if isinstance(c, ToolCall):
        return c
    fn = c.get("function", c)
    args = fn.get("arguments", "{}")
    return ToolCall(str(c.get("id", "")), str(fn.get("name", "")),
                    args if isinstance(args, str) else json.dumps(args))


def _diff(a: PagerConfig, b: PagerConfig) -> str:
    da, db = a.to_dict(), b.to_dict()
    return ", ".join(f"{k}: stored {da[k]!r} vs given {db[k]!r}" for k in da if da[k] != db[k])
