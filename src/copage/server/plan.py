"""What a request adds to its locked conversation: new messages, a retry, a regenerate.

:mod:`copage.server.recognise` guesses which conversation a request belongs to
before any lock is taken; once the conversation is locked and loaded, :func:`plan`
decides against its stored head what the request is: the new messages to add
(with the chain before them), the stored answer of a **retry** (replayed, no
model call), or a **regenerate** / unrelated transparent request (:class:`Fork`:
a new conversation). A guess that no longer holds raises :class:`Stale` (look
again). Nothing here writes to the store or takes a lock.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from copage.core.types import ToolCall
from copage.memory import PagedMemory
from copage.server.body import Messages
from copage.server.client_window import overlapping
from copage.server.error_body import ProxyError, bad_request
from copage.server.proxy_loop import Outcome
from copage.server.recognise import (
    RQ,
    Ask,
    Guess,
    Recent,
    Seen,
    answer_of,
    continues,
    is_retry,
    last_assistant,
    repeats,
)
from copage.server.request import ChatCall, Message
from copage.server.transcript import GENESIS, chain, digest
from copage.session.prompts import join_system

#: A request with at most this many messages may be handled on the event loop.
SMALL = 32


@dataclass(frozen=True, slots=True)
class Hint:
    """Header mode: the request continues ``seen`` at ``start``, or (None) repeats it."""

    seen: Seen
    start: int | None


At = Callable[[PagedMemory | None], "tuple[Message, ...] | None"]
"""A header-mode request's claim that it continues a named answer (a Responses
``previous_response_id``), checked under the conversation's lock: given the loaded
conversation it returns None (continue it) or the messages of a branch (the head moved
on since the request was routed); given None (the conversation is gone) it raises the
caller's error."""


class Stale(Exception):
    """The recognised conversation moved on before its lock was taken: look again."""


class Fork(Exception):
    """Start a new conversation instead: with ``messages`` (a branch), or the request's."""

    def __init__(self, messages: tuple[Message, ...] | None = None) -> None:
        super().__init__("fork")
        self.messages = messages


def hint_of(recent: Recent, tenant: str, cid: str, call: ChatCall) -> Hint | None:
    """Header mode: how the request relates to this worker's memory of the
    conversation's last request (checked against the stored head under the lock)."""
    seen = recent.get(tenant, cid)
    if seen is None:
        return None
    start = continues(seen, call.raw)
    if start is not None:
        return Hint(seen, start)
    return Hint(seen, None) if repeats(seen, call.raw) else None


def plan(mem: PagedMemory, tenant: str, cid: str, call: ChatCall, ask: Ask,
         guess: Guess | None, override: tuple[Message, ...] | None, hint: Hint | None,
         *, recent: Recent, window: float) -> tuple[tuple[Message, ...], str] | Outcome:
    """The new messages and the chain before them, or the replayed answer of a retry.

    Raises ``Stale`` (the guess no longer holds), ``Fork`` (a regenerate: start
    a branch) or a 409 (header mode, messages unrelated to the conversation).
    """
    head = head_of(mem)
    if head == GENESIS:  # a new conversation: its chain starts at its caller's own start
        head = call.start
    rq = last_rq(mem)
    if override is not None:
        return override, head
    if guess is not None:  # transparent mode
        if guess.kind == "new":
            return call.messages, head
        if guess.kind == "continue":
            if head != guess.head:
                raise Stale(cid)
            if guess.window:
                if overlap(call.messages, mem.turns) != guess.start:
                    overlapping(tenant, cid, "its window is not the end of that transcript")
                    fork(None)
                if mem.config.tool_name in call.tool_names:
                    # a window that now brings a tool named like the stored conversation's
                    # recall tool: a guess, not the client's word, so a new conversation
                    # (its recall tool renamed) rather than a 400
                    fork(None)
            if rq is not None and str(rq.get("who") or "") != call.who:
                # The same exchanges from another end user (identity fields): theirs is
                # a conversation of its own, never this one.
                fork(None)
            check_key(rq, ask)
            return call.convert(guess.start), head
        if rq is None or rq.get("prev") != guess.prev:
            raise Stale(cid)
        return again(mem, rq, call, ask, window) or fork(None)
    # header mode
    if mem.last_turn is None and mem.system is None:
        return call.messages, head
    n = len(call.raw)
    context = rq is not None and n > int(rq.get("k") or 0)  # more than the last request
    if hint is None and len(call.raw) <= SMALL:
        hint = hint_of(recent, tenant, cid, call)
    if hint is not None and hint.seen.head == head:
        if hint.start is not None:
            check_key(rq, ask)
            return call.convert(hint.start), head
        if rq is not None:  # the last request again
            out = again(mem, rq, call, ask, window)
            if out is not None:
                return out
            if context:  # a regenerate
                raise Fork(branch(mem, rq, call))
            return call.messages, head  # only new messages: the same ones again
    msgs = call.messages
    heads = chain(msgs, call.start)
    for i in range(n - 1, 0, -1):  # exact continuation: the history, then new messages
        if heads[i] == head:
            check_key(rq, ask)
            return msgs[i:], head
    if heads[n] == head:
        raise bad_request("no new message: the conversation already ends with these "
                          "messages", "no_new_messages", "messages")
    turns = mem.turns  # a copy (O(turns)): only here, where the request is hashed anyway
    suffix = overlap(msgs, turns)
    if suffix is not None:  # a suffix of the transcript, then new messages
        check_key(rq, ask)
        return msgs[suffix:], head
    if rq is not None and (heads[n] == rq.get("prev") or asks_again(msgs, turns, rq)):
        out = again(mem, rq, call, ask, window)  # the last turn's request again
        if out is not None:
            return out
        if context:  # with earlier messages: a regenerate
            raise Fork(branch(mem, rq, call))
        # only the new messages, the same as last time, and not a retry: new messages
    if any(m.role == "assistant" for m in msgs):
        raise ProxyError(409, "the messages do not continue this conversation (header "
                         "X-Copage-Conversation): send only the new messages, or the whole "
                         "history as returned, or drop the header to start a new "
                         "conversation", code="conversation_mismatch", param="messages")
    check_key(rq, ask)
    return msgs, head  # only new messages

def request_system(mem: PagedMemory, call: ChatCall, new: Sequence[Message] = ()
                   ) -> str | None:
    """The system prompt the request gives the conversation: every system (and developer)
    message of it, in order, joined by a blank line (None: it has none, so the stored one
    stays). When the messages continue this worker's known prefix (byte for byte the last
    request's, whose system prompt is the stored one), only ``new`` is looked at: the
    stored prompt, then the system messages ``new`` adds (a resent history is still not
    parsed)."""
    raw = call.raw
    if isinstance(raw, Messages) and raw.matched is not None:
        added = [m.text for m in new if m.role == "system"]
        if not added:
            return None
        return join_system([*([mem.system] if mem.system is not None else []), *added])
    return joined_system(call.messages)


def joined_system(messages: Sequence[Message]) -> str | None:
    """The system messages of ``messages`` joined in order (None: there are none)."""
    return join_system(m.text for m in messages if m.role == "system")


def system_change(mem: PagedMemory, call: ChatCall, new: Sequence[Message],
                  override: Sequence[Message] | None = None) -> str | None:
    """The system prompt to pin before ``new`` (the tail of the request's messages, or a
    branch's ``override``) when it is not the stored one, else None. System messages are
    not part of the transcript chain, so a client whose system prompt changes each
    request (the time, retrieved context) continues its conversation, and none of a
    request's several system messages is dropped."""
    system = (joined_system(override) if override is not None
              else request_system(mem, call, new))
    return system if system is not None and system != mem.system else None


def again(mem: PagedMemory, rq: Mapping[str, Any], call: ChatCall, ask: Ask, window: float
          ) -> Outcome | None:
    """The last turn's request came again: its stored answer if this is a retry (not
    when, without a key, it carries another system prompt than the stored one)."""
    if ask.key is not None and rq.get("key") == ask.key and rq.get("fp") != call.fingerprint:
        raise key_reused()
    if ask.key is None:
        system = request_system(mem, call)
        if system is not None and system != mem.system:
            return None
    if is_retry(rq, call, ask, window):
        return replay_of(mem, rq)
    return None

def check_key(rq: Mapping[str, Any] | None, ask: Ask) -> None:
    """A 422 if the request reuses the last turn's ``Idempotency-Key`` for new messages."""
    if ask.key is not None and rq is not None and rq.get("key") == ask.key:
        raise key_reused()

def branch(mem: PagedMemory, rq: Mapping[str, Any], call: ChatCall) -> tuple[Message, ...]:
    """The history a regenerate branches from: the request's system prompt (the stored
    one when it carries none), the transcript before the last turn, then that turn's
    request messages again (header mode)."""
    k, kt = int(rq.get("k") or 0), int(rq.get("kt") or 0)
    turns, system = mem.turns, request_system(mem, call)
    if system is None:
        system = mem.system
    before = [answer_of(t) for t in turns[: len(turns) - kt - 1]]
    again = [m for m in call.messages[len(call.raw) - k:] if m.role != "system"]
    first = [Message("system", system)] if system is not None else []  # all of them, joined
    return tuple(first + before + again)


def fork(messages: tuple[Message, ...] | None) -> Any:
    """Start a new conversation: a branch holding ``messages``, or the request's (None)."""
    raise Fork(messages)


def key_reused() -> ProxyError:
    """The 422 for an ``Idempotency-Key`` already used for another request."""
    return ProxyError(422, "this Idempotency-Key was already used for another request on "
                      "this conversation", code="idempotency_key_reused")



def head_of(mem: PagedMemory) -> str:
    """The transcript chain through the stored turns (GENESIS before the first)."""
    last = mem.last_turn
    if last is None:
        return GENESIS
    h = last.meta.get("h")
    return str(h) if h else "unhashed:" + mem.conversation_id


def last_rq(mem: PagedMemory) -> Mapping[str, Any] | None:
    """What the last turn's request was (:func:`request_info`), None before an answer."""
    last = mem.last_turn
    if last is None or last.role != "assistant":
        return None
    rq = last.meta.get(RQ)
    return rq if isinstance(rq, Mapping) else None


def replay_of(mem: PagedMemory, rq: Mapping[str, Any]) -> Outcome:
    """The stored last answer as the outcome of a retried request."""
    last = mem.last_turn
    assert last is not None  # a replay answers the stored last turn
    usage = rq.get("usage") or [0, 0]
    return Outcome(text=last.text, tool_calls=[ToolCall(c.id, c.name, c.arguments)
                                               for c in last.tool_calls],
                   finish_reason=str(rq.get("finish") or "stop"),
                   model=str(rq.get("model") or ""), prompt_tokens=int(usage[0]),
                   completion_tokens=int(usage[1]))


def overlap(msgs: Sequence[Message], turns: Sequence[Any]) -> int | None:
    """Where the new messages start if ``msgs`` begins with a suffix of the stored turns
    that includes the last one (system messages aside), else None."""
    if not turns:
        return None
    last = answer_of(turns[-1]).canonical()
    p = last_assistant([{"role": m.role} for m in msgs])
    while p is not None and p < len(msgs) - 1:
        if msgs[p].canonical() == last:
            mine = [m for m in msgs[: p + 1] if m.role != "system"]
            if len(mine) <= len(turns) and all(
                    m.canonical() == answer_of(t).canonical()
                    for m, t in zip(mine, turns[len(turns) - len(mine):], strict=True)):
                return p + 1
        p = next((i for i in range(p - 1, -1, -1) if msgs[i].role == "assistant"), None)
    return None


def asks_again(msgs: Sequence[Message], turns: Sequence[Any], rq: Mapping[str, Any]) -> bool:
    """Whether ``msgs`` ends with the last turn's request messages, after nothing or a
    suffix of the transcript before that turn."""
    k, kt = int(rq.get("k") or 0), int(rq.get("kt") or 0)
    if k == 0 or len(msgs) < k or digest(msgs[len(msgs) - k:]) != rq.get("nd"):
        return False
    earlier = [m for m in msgs[: len(msgs) - k] if m.role != "system"]
    stored = turns[: len(turns) - kt - 1]
    if len(earlier) > len(stored):
        return False
    return all(m.canonical() == answer_of(t).canonical()
               for m, t in zip(earlier, stored[len(stored) - len(earlier):], strict=True))


def check_new(new: tuple[Message, ...], name: str, call: ChatCall) -> None:
    """A 400 unless ``new`` is a turn's worth of new messages: it ends with a user or tool
    message, system messages aside (a system message after the question is a system
    message like the others: it joins the system prompt, as OpenAI accepts it)."""
    if not new:
        raise bad_request("no new message: the conversation already ends with these messages",
                          "no_new_messages", "messages")
    last = next((m for m in reversed(new) if m.role != "system"), None)
    if last is None or last.role not in ("user", "tool"):
        raise bad_request("the last message must be a user or tool message", param="messages")
    if name in call.tool_names:
        raise bad_request(f"a client tool is named {name!r}, like this conversation's recall "
                          "tool; rename the client tool", "tool_name_conflict", "tools")
