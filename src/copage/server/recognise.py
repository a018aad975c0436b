"""Which conversation a request continues, and how: continuation, overlap, retry, regenerate.

Clients send three shapes of ``messages`` (see docs/serve.md, "Conversations"):

* the whole history again (OpenAI clients): the stored transcript, then new messages;
* only the new messages (clients that know ``X-Copage-Conversation``);
* the last few messages: a suffix of the stored transcript, then new messages.

A request that asks again what the conversation's last turn asked (its messages
end exactly like that turn's request) is a **retry** when it carries the same
``Idempotency-Key``, or no key and the same fingerprint within the window and no
sign of being a first attempt; it is answered from the store. Otherwise it is a
**regenerate**, which starts a new branch (a new conversation holding the history
up to the question). Anything else that does not fit is unrelated (409 in header
mode, a new conversation in transparent mode): never silently stored twice.

Finding the shape must cost in proportion to the new messages only. Each worker
keeps, per conversation it served, the body of the last request up to the end of
its last message (:class:`Seen`, a :class:`~copage.server.body.Known` prefix); a
client that resends its history sends those same bytes again, so one
``str.startswith`` proves the prefix and :mod:`copage.server.body` does not even
parse the messages inside it; only the echoed answer and the new messages are
looked at in Python. Without such a match (another worker served the last turn,
a restart, an edited history) the slow path validates and hashes the whole
request, off the event loop.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from copage.core.types import Turn
from copage.server.body import BUCKET, Known, Messages
from copage.server.request import ChatCall, Message, _message
from copage.server.transcript import GENESIS

#: How far from the end a fast lookup searches for the echoed answer.
MAX_TAIL = 256
#: The turn meta key holding what the turn's request was (for retries).
RQ = "rq"


@dataclass(frozen=True, slots=True)
class Guess:
    """Where a transparent-mode request seems to belong (checked again under the lock).

    ``continue``: messages ``start:`` are new, ``head`` is the chain before them.
    ``retry``: the request equals the one that produced the last answer (chain ``prev``).
    ``new``: a new conversation with every message (``prev``: the chain through the
    request, which names its pending lock).
    """

    kind: Literal["continue", "retry", "new"]
    conversation_id: str = ""
    start: int = 0
    head: str = GENESIS
    prev: str = ""
    fast: bool = False
    #: ``continue`` found by a trimmed window's last exchange: checked under the lock.
    window: bool = False


@dataclass(frozen=True, slots=True)
class Seen:
    """A worker's memory of a conversation's last committed request."""

    known: Known  # the request's body up to the end of its last message
    answer: list[Any]  # canonical form of the stored answer
    head: str  # chain after the answer (the conversation's head)
    prev: str  # chain through the request (before the answer)
    who: str = ""  # the request's identity digest (ChatCall.who)


@dataclass(frozen=True, slots=True)
class Ask:
    """How a request asks: its idempotency key and the SDK's retry counter, if sent."""

    key: str | None = None
    retry_count: int | None = None
    now: float = 0.0


def answer_of(turn: Turn) -> Message:
    """The client-visible message of a stored turn."""
    calls = tuple({"id": c.id, "type": "function",
                   "function": {"name": c.name, "arguments": c.arguments}}
                  for c in turn.tool_calls)
    return Message(turn.role, turn.text, calls, turn.tool_call_id)


def canonical_raw(m: Any, i: int) -> list[Any] | None:
    """The canonical form of a raw message, or None if it is not a valid message."""
    try:
        return _message(m, i).canonical()
    except Exception:  # noqa: BLE001 - any malformed message: not a match
        return None


class Recent:
    """Per-worker LRU of :class:`Seen` by (tenant, conversation), bounded in entries and
    in the bytes of the prefixes it keeps, with the prefixes grouped by their first
    characters (thread-safe; ``size`` 0 disables it)."""

    def __init__(self, size: int, max_chars: int = 256 * 1024 * 1024) -> None:
        self.size, self.max_chars = size, max_chars
        self._items: OrderedDict[tuple[str, str], Seen] = OrderedDict()
        self._buckets: dict[tuple[str, str], set[str]] = {}
        self._chars = 0
        self._mutex = threading.Lock()

    def get(self, tenant: str, cid: str) -> Seen | None:
        with self._mutex:
            return self._items.get((tenant, cid))

    def put(self, tenant: str, cid: str, seen: Seen) -> None:
        if self.size == 0 or len(seen.known.prefix) > self.max_chars:
            self.discard(tenant, cid)
            return
        with self._mutex:
            self._drop(tenant, cid)
            self._items[(tenant, cid)] = seen
            self._buckets.setdefault((tenant, seen.known.prefix[:BUCKET]), set()).add(cid)
            self._chars += len(seen.known.prefix)
            while len(self._items) > self.size or self._chars > self.max_chars:
                t, c = next(iter(self._items))
                self._drop(t, c)

    def discard(self, tenant: str, cid: str) -> None:
        with self._mutex:
            self._drop(tenant, cid)

    def _drop(self, tenant: str, cid: str) -> None:
        old = self._items.pop((tenant, cid), None)
        if old is not None:
            self._chars -= len(old.known.prefix)
            key = (tenant, old.known.prefix[:BUCKET])
            group = self._buckets.get(key)
            if group is not None:
                group.discard(cid)
                if not group:
                    del self._buckets[key]

    def candidates(self, tenant: str, text: str) -> dict[Known, str]:
        """The prefixes (and their conversations) a body starting like ``text`` may continue."""
        with self._mutex:
            cids = list(self._buckets.get((tenant, text[:BUCKET]), ()))
            return {self._items[(tenant, c)].known: c for c in cids}

    def locate(self, tenant: str, messages: Sequence[Any], cid: str | None, who: str = ""
               ) -> Guess | None:
        """A transparent-mode guess from the prefix the body continued, or None (also when
        the conversation's last request came from another identity ``who``)."""
        if not isinstance(messages, Messages) or messages.matched is None or cid is None:
            return None
        seen = self.get(tenant, cid)
        if seen is None or seen.known is not messages.matched or seen.who != who:
            return None
        if len(messages) == seen.known.count:
            return Guess("retry", cid, prev=seen.prev, fast=True)
        start = continues(seen, messages)
        if start is not None:
            return Guess("continue", cid, start=start, head=seen.head, fast=True)
        return None


def last_assistant(raw: Sequence[Any]) -> int | None:
    """Index of the last assistant message within :data:`MAX_TAIL` of the end."""
    for i in range(len(raw) - 1, max(-1, len(raw) - 1 - MAX_TAIL), -1):
        m = raw[i]
        if isinstance(m, Mapping) and m.get("role") == "assistant":
            return i
    return None


def continues(seen: Seen, messages: Sequence[Any]) -> int | None:
    """Where the new messages start if ``messages`` is the last request + the answer + more."""
    size = seen.known.count
    if not (isinstance(messages, Messages) and messages.matched is seen.known
            and len(messages) > size + 1):
        return None
    if canonical_raw(messages[size], size) != seen.answer:
        return None
    return size + 1


def repeats(seen: Seen, messages: Sequence[Any]) -> bool:
    """Whether ``messages`` is exactly the last request's."""
    return (isinstance(messages, Messages) and messages.matched is seen.known
            and len(messages) == seen.known.count)


# ----------------------------------------------------------------- retries
def request_info(call: ChatCall, ask: Ask, new: Sequence[Message], prev: str,
                 new_digest: str, finish: str, model: str, usage: tuple[int, int],
                 at: float) -> dict[str, Any]:
    """What the answer turn keeps about its request (turn meta ``rq``); ``at`` is the
    time of the turn's commit (what the retry window is measured from)."""
    return {"k": len(new), "nd": new_digest, "prev": prev, "fp": call.fingerprint,
            "key": ask.key or "", "at": at, "finish": finish, "model": model,
            "usage": list(usage), "who": call.who}


def is_retry(rq: Mapping[str, Any], call: ChatCall, ask: Ask, window: float) -> bool:
    """Whether a request asking the last turn's question again is a retry of it.

    With an ``Idempotency-Key``: only the same key (a reused key on another request
    is rejected by the caller). Without: the same fingerprint, arriving at most
    ``window`` seconds after the last turn's commit (or before it: a request that
    raced the original, e.g. at another worker, and waited for its lock), unless the
    client says this is its first attempt (the official SDKs send
    ``X-Stainless-Retry-Count: 0``).
    """
    if ask.key is not None:
        return bool(rq.get("key")) and rq.get("key") == ask.key
    if ask.retry_count == 0:
        return False
    return (rq.get("fp") == call.fingerprint
            and ask.now - float(rq.get("at") or 0.0) <= window)
