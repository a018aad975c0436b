"""Which of an agent's state messages copage has not stored yet.

With a LangGraph checkpointer the state holds the stored messages themselves (same
ids), so the new ones are those after the latest stored turn. Without one, a
caller resends its whole history, often as fresh message objects with new ids;
like the proxy (``server/transcript.py``), the middleware then recognises the
history by its content: every turn it stores carries ``meta["h"]``, a hash chain
over the canonical form of the messages up to it (role, text, tool calls, tool
call id; system messages are not turns and take no part), and the longest prefix
of the incoming messages whose chain equals the stored head is the history
already stored. Messages matched neither way are compared by id, as before.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from copage.adapters.langchain.convert import TurnArgs, to_turn
from copage.core.types import ToolCall, Turn
from copage.memory import PagedMemory

GENESIS = ""
HASH_KEY = "h"


def _args(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def canonical(role: str, text: str, calls: Sequence[ToolCall], tool_call_id: str | None) -> str:
    """The bytes a message is recognised by (role and text alone when it has no tool
    call parts; a JSON list otherwise, which no role starts like)."""
    if not calls and not tool_call_id:
        return f"{role}\x1f{text}"
    return json.dumps([role, text, [[c.id, c.name, _args(c.arguments)] for c in calls],
                       tool_call_id or ""], separators=(",", ":"), sort_keys=True,
                      ensure_ascii=False)


def link(prev: str, payload: str) -> str:
    """The chain hash after a message whose canonical form is ``payload``."""
    return hashlib.sha256((prev + "\n" + payload).encode("utf-8", "surrogatepass")).hexdigest()


def of_args(turn: TurnArgs) -> str:
    meta = turn.meta
    return canonical(turn.role, turn.text, meta.get("tool_calls") or [],
                     meta.get("tool_call_id"))


def of_message(m: BaseMessage) -> str:
    """:func:`of_args` of ``to_turn(m)``, without building the turn for a plain message."""
    if isinstance(m.content, str) and not isinstance(m, ToolMessage | SystemMessage) and not (
            isinstance(m, AIMessage) and m.tool_calls):
        return f"{'assistant' if isinstance(m, AIMessage) else 'user'}\x1f{m.content}"
    return of_args(to_turn(m))


def of_turn(turn: Turn) -> str:
    return canonical(turn.role, turn.text, turn.tool_calls, turn.tool_call_id)


def head(mem: PagedMemory) -> str | None:
    """The chain hash after the latest stored turn (None when a turn lacks one: stored
    some other way, then the chain is computed over the stored turns)."""
    last = mem.last_turn
    if last is None:
        return GENESIS
    h = last.meta.get(HASH_KEY)
    if isinstance(h, str):
        return h
    out = GENESIS
    for t in mem.turns:
        out = link(out, of_turn(t))
    return out


def unstored(mem: PagedMemory, messages: Sequence[BaseMessage]) -> list[TurnArgs]:
    """The turns to store for ``messages`` (oldest first), each with its chain hash."""
    last = mem.last_turn
    start = None
    if last is not None:  # the checkpointer case: the latest stored turn is in the state
        start = next((i + 1 for i in range(len(messages) - 1, -1, -1)
                      if messages[i].id == last.id), None)
    if start is None:  # a resent history: its longest prefix that is the stored one
        want = head(mem)
        h, start = GENESIS, 0 if want == GENESIS else None
        for i, m in enumerate(messages):
            if isinstance(m, SystemMessage):
                continue
            h = link(h, of_message(m))
            if h == want:
                start = i + 1
    if start is None:  # neither: the messages whose ids are unknown
        new = [m for m in messages if not (m.id and mem.has_turn(m.id))]
    else:
        new = [m for m in messages[start:] if not (m.id and mem.has_turn(m.id))]
    out: list[TurnArgs] = []
    chained: str | None = None
    for m in new:
        turn = to_turn(m)
        if turn.role == "system":
            out.append(turn)
            continue
        chained = link(head(mem) or GENESIS if chained is None else chained, of_args(turn))
        out.append(TurnArgs(turn.role, turn.text, {**turn.meta, HASH_KEY: chained}))
    return out
