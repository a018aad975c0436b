"""Which of an agent's state messages copage has not stored yet.

With a LangGraph checkpointer the state holds the stored messages themselves (same
ids), so the new ones are those after the latest stored turn. Without one, a
caller resends its whole history, often as fresh message objects with new ids;
like the proxy (``server/transcript.py``), the middleware then recognises the
history by its content: the messages (system messages aside: they are not turns)
continue the stored conversation when its turns are their first messages, compared
by canonical form (role, text, tool calls, tool call id). The check starts at the
end: the latest stored turn must be the message at its position (one comparison,
which turns away most other histories), then the rest is compared from there back
to the first message (a history edited or shortened anywhere is not a
continuation). That reads every message once, a string comparison each (no
hashing): knowing that a history sent anew is the stored one takes reading it.
Messages matched neither way are compared by id, as before.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from copage.adapters.langchain.convert import TurnArgs, to_turn
from copage.core.types import ToolCall, Turn
from copage.memory import PagedMemory


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


def same(m: BaseMessage, t: Turn) -> bool:
    """Whether message ``m`` is stored as turn ``t``: ``of_message(m) == of_turn(t)``."""
    return _all_same([m], [t])


def _all_same(messages: Sequence[BaseMessage], turns: Sequence[Turn]) -> bool:
    """``all(map(same, messages, turns))`` (equal lengths), from the last; a plain text
    message is compared without building its canonical form."""
    for i in range(len(turns) - 1, -1, -1):
        m, t = messages[i], turns[i]
        c, kind = m.content, type(m)
        if type(c) is str and not t.tool_calls and not t.tool_call_id:
            if kind is HumanMessage:
                if c != t.text or t.role != "user":
                    return False
                continue
            if kind is AIMessage and not m.tool_calls:  # type: ignore[attr-defined]
                if c != t.text or t.role != "assistant":
                    return False
                continue
        if of_message(m) != of_turn(t):
            return False
    return True


def continued(messages: Sequence[BaseMessage], turns: Sequence[Turn]) -> int | None:
    """The index after the messages that are the stored ``turns`` (system messages
    aside), when ``messages`` begin with them; else None (see module docstring)."""
    k = len(turns)
    if k == 0:
        return 0
    if (len(messages) >= k and same(messages[k - 1], turns[k - 1])  # the cheap check
            and _all_same(messages[:k - 1], turns[:k - 1])):
        return k
    if not any(isinstance(m, SystemMessage) for m in messages):
        return None
    at = [i for i, m in enumerate(messages) if not isinstance(m, SystemMessage)]
    if len(at) < k or not _all_same([messages[i] for i in at[:k]], turns):
        return None
    return at[k - 1] + 1


def _after_id(messages: Sequence[BaseMessage], turn_id: str, *, within: int | None = None
              ) -> int | None:
    """The index after the latest message with this id, looked for among the last
    ``within`` messages (all when None); None when there is none."""
    stop = -1 if within is None else max(len(messages) - within, 0) - 1
    for i in range(len(messages) - 1, stop, -1):
        if messages[i].id == turn_id:
            return i + 1
    return None


def unstored(mem: PagedMemory, messages: Sequence[BaseMessage]) -> list[TurnArgs]:
    """The turns to store for ``messages`` (oldest first)."""
    last = mem.last_turn
    start: int | None = 0
    if last is not None:
        # a checkpointer: the latest stored turn is one of the state's last messages;
        # else a resent history begins with the stored turns; else it is further back
        start = _after_id(messages, last.id, within=16)
        if start is None:
            start = continued(messages, mem.turns)
        if start is None:
            start = _after_id(messages, last.id)
    if start is None:  # neither: the messages whose ids are unknown
        new = [m for m in messages if not (m.id and mem.has_turn(m.id))]
    else:
        new = [m for m in messages[start:] if not (m.id and mem.has_turn(m.id))]
    return [to_turn(m) for m in new]
