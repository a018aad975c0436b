"""Which conversation a request belongs to, found before its lock is taken.

One finder for every way a request names (or does not name) its conversation:

- transparent recognition (:meth:`Finder.transparent`): a request without a
  conversation id, hashed into its transcript chain and looked up in the
  transcript index (a retry of the last request, a continuation, a trimmed
  window's last exchange, else a new conversation); a first turn's pending lock
  (:meth:`Finder.hold_pending`, :meth:`Finder.look_again`) lets a retry that
  arrives while the first attempt runs find it;
- a named answer (:meth:`Finder.route`, :meth:`Finder.at`): a Responses API
  ``previous_response_id``, found by one index lookup when it is its
  conversation's latest answer, else by reading the conversation (a retry of the
  last turn, or a fork from an older answer).

This worker's memory of recent requests (:class:`~copage.server.recognise.Recent`)
is the fast path before these and lives in :mod:`copage.server.recognise`; what
the request then adds under the lock is :mod:`copage.server.plan`'s.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from copage.core.types import Turn
from copage.memory import PagedMemory
from copage.server.client_window import window_guess
from copage.server.error_body import ProxyError
from copage.server.locking import Locks
from copage.server.plan import At, last_rq
from copage.server.recognise import RQ, Ask, Guess, answer_of, is_retry
from copage.server.request import ChatCall, Message
from copage.server.transcript import TranscriptIndex, chain, legacy_chain
from copage.session.opening import read
from copage.stores.protocol import ConversationNotFound, PageStore

__all__ = ["AnswerRef", "Finder", "Route"]

T = TypeVar("T")
log = logging.getLogger("copage.server")


class AnswerRef(Protocol):
    """A stored answer a request names (a Responses API response id)."""

    @property
    def conversation_id(self) -> str: ...

    @property
    def point(self) -> str: ...

    def names(self, chain: str) -> bool:
        """True when the answer stored after the request chained as ``chain`` is this one."""
        ...

    def not_found(self) -> ProxyError:
        """The error for a request naming an answer that is not there."""
        ...


@dataclass(frozen=True, slots=True)
class Route:
    """Where a request continuing a named answer goes: that conversation (``history``
    None: send only the new input), or a new branch holding ``history``."""

    history: list[dict[str, Any]] | None


class Finder:
    """Finds the conversation of a request (see module docstring)."""

    def __init__(self, store: PageStore, index: TranscriptIndex, locks: Locks,
                 run: Callable[..., Awaitable[Any]], window: float) -> None:
        self.store, self.index, self.locks = store, index, locks
        #: Runs blocking work in the store's thread pool.
        self.run = run
        #: How long an identical request counts as a retry (seconds).
        self.window = window

    # ------------------------------------------------------------ transparent
    async def hold_pending(self, held: AsyncExitStack, tenant: str, call: ChatCall,
                            ask: Ask, guess: Guess, deadline: float) -> bool:
        """Take the pending lock of a first turn's request (into ``held``); True if taken.

        A transparent client's first turn has no conversation yet, so a retry arriving
        while the first attempt runs would not find it among committed turns. Both
        take the store's lock on a name made of the request's chain, fingerprint and
        ``Idempotency-Key`` (across workers); the first holds it for its whole turn. A
        request that may be a retry (a key, or no sign of a first attempt) waits for
        it; once it holds the lock, the caller looks again (:meth:`look_again`) and
        finds the committed turn (a retry, answered from the store) or nothing (the
        first attempt failed, or there was none: this one runs the turn). A request
        that says it is a first attempt (``X-Stainless-Retry-Count: 0``) does not wait:
        if the name is busy, it goes ahead unregistered (False).
        """
        ident = f"key:{ask.key}" if ask.key is not None else f"fp:{call.fingerprint}"
        # "/" is in no conversation id (copage.ids): this name is no conversation's lock
        name = "pending/" + hashlib.sha256(f"{guess.prev}\0{ident}".encode(
            "utf-8", "surrogatepass")).hexdigest()[:32]
        wait = ask.key is not None or ask.retry_count != 0
        key = (tenant, name)
        if not wait and self.locks.queued(key):
            return False
        async with AsyncExitStack() as mine:
            await mine.enter_async_context(self.locks.guard(key, deadline))
            lock = self.locks.try_lock(tenant, name)
            if not await self.locks.enter(lock):
                lock.__exit__(None, None, None)
                if not wait:
                    return False
                lock = await self.locks.acquire(tenant, name, deadline)
            mine.push_async_callback(self.locks.leave, lock)
            held.push_async_exit(mine.pop_all())
        return True

    async def look_again(self, tenant: str, guess: Guess) -> Guess:
        """A new-conversation guess checked again under the pending lock: the request may
        have been committed (by the identical one just waited for, or one that ran
        between the first look and taking the lock)."""
        cid = await self._index(self.index.find_prev, tenant, guess.prev)
        return guess if cid is None else Guess("retry", cid, prev=guess.prev)

    async def transparent(self, tenant: str, call: ChatCall) -> Guess:
        """Transparent mode without this worker's memory: hash the request, ask the index."""
        def find() -> Guess:
            msgs = call.messages  # validates every message (a 400 names the bad one)
            heads = chain(msgs, call.start)
            found = self._find(tenant, msgs, heads)
            if found is None and not call.identity:  # stored when system messages were linked
                legacy = legacy_chain(msgs)
                found = None if legacy is None else self._find(tenant, msgs, legacy)
            if found is None:  # a client that trims its history: the window's last exchange
                found = window_guess(self.index, tenant, msgs, call.start)
            return found or Guess("new", prev=heads[-1])

        return await self._index(find)

    def _find(self, tenant: str, msgs: Sequence[Message], heads: Sequence[str]
              ) -> Guess | None:
        """The conversation ``msgs`` (chained as ``heads``) retries or continues, or None."""
        prev_cid = self.index.find_prev(tenant, heads[-1])
        if prev_cid is not None:
            return Guess("retry", prev_cid, prev=heads[-1])
        wanted = [h if i == 0 or msgs[i - 1].role == "assistant" else ""
                  for i, h in enumerate(heads[:-1])]
        match = self.index.find(tenant, wanted)
        if match is None:
            return None
        return Guess("continue", match.conversation_id, start=match.length,
                     head=heads[match.length])

    async def _index(self, fn: Callable[..., T], *args: Any) -> T:
        """An index lookup in the pool; the index's failure is a 503 ``index_error``."""
        try:
            result: T = await self.run(fn, *args)
            return result
        except ProxyError:
            raise
        except Exception as e:  # noqa: BLE001 - any backend's failure: 503, not 500
            log.error("transcript index lookup failed (%s)", type(e).__name__)
            raise ProxyError(503, "the conversation index is unavailable", type="server_error",
                             code="index_error") from None

    # --------------------------------------------------------- a named answer
    def route(self, tenant: str, ref: AnswerRef, call: ChatCall, ask: Ask) -> Route:
        """The latest answer of its conversation by one index lookup (the chain through the
        last turn's request is the index's ``prev``), else by reading the conversation
        (blocking: run it in the pool)."""
        try:
            latest = self.index.find_prev(tenant, ref.point) == ref.conversation_id
        except Exception as e:  # noqa: BLE001 - the index is a lookup aid: read the store
            log.warning("transcript index lookup failed (%s)", type(e).__name__)
            latest = False
        if latest:
            return Route(None)
        return self.locate(tenant, ref, call, ask)

    def at(self, ref: AnswerRef, call: ChatCall, ask: Ask) -> At:
        """The check, under the conversation's lock, of a request routed to continue it:
        ``ref`` is still its latest answer (or this is a retry of the turn after it), else
        the branch to start; the conversation gone: not found, as for an unknown id."""
        def check(mem: PagedMemory | None) -> tuple[Message, ...] | None:
            if mem is None:
                raise ref.not_found()
            rq = last_rq(mem)
            if rq is not None and ref.names(str(rq.get("prev") or "")):
                return None
            return self._place(mem, ref, call, ask)

        return check

    def locate(self, tenant: str, ref: AnswerRef, call: ChatCall, ask: Ask) -> Route:
        """Find the answer's point in its conversation by reading it (blocking)."""
        try:
            mem = read(self.store, ref.conversation_id, tenant=tenant)
        except ConversationNotFound:
            raise ref.not_found() from None
        branch = self._place(mem, ref, call, ask)
        return Route(None if branch is None else [chat_dict(m) for m in branch])

    def _place(self, mem: PagedMemory, ref: AnswerRef, call: ChatCall, ask: Ask
               ) -> tuple[Message, ...] | None:
        """The latest answer: continue the conversation (None); the one before it asked
        again as a retry: the conversation too (the service answers from the store); an
        older one: the messages of a fork."""
        turns = mem.turns
        at = answer_at(turns, ref)
        if at is None:
            raise ref.not_found()
        if at == len(turns) - 1:
            return None
        new = call.messages
        last = turns[-1].meta.get(RQ)
        head = str(turns[at].meta.get("h") or "")
        if (isinstance(last, Mapping) and chain(new, head)[-1] == last.get("prev")
                and is_retry(last, call, ask, self.window)):
            return None
        system = [m for m in new if m.role == "system"][:1] or (
            [Message("system", mem.system)] if mem.system is not None else [])
        before = [answer_of(t) for t in turns[: at + 1]]
        rest = [m for m in new if m.role != "system"]
        return (*system, *before, *rest)


def answer_at(turns: Sequence[Turn], ref: AnswerRef) -> int | None:
    """The index of the answer turn ``ref`` names (the last one, if it was asked twice)."""
    return next((i for i in range(len(turns) - 1, -1, -1) if turns[i].role == "assistant"
                 and isinstance(rq := turns[i].meta.get(RQ), Mapping)
                 and ref.names(str(rq.get("prev") or ""))), None)


def chat_dict(m: Message) -> dict[str, Any]:
    """A message as a Chat Completions message dict."""
    d: dict[str, Any] = {"role": m.role, "content": m.text}
    if m.tool_calls:
        d["tool_calls"] = [dict(c) for c in m.tool_calls]
    if m.tool_call_id is not None:
        d["tool_call_id"] = m.tool_call_id
    return d
