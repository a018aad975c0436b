"""Which conversation a LiteLLM request continues, and which of its messages are new.

The conversation is named, in this order, by the ``X-Copage-Conversation`` header, the
request's ``metadata.copage_conversation``, the OpenAI ``user`` field (when the hook
is told to use it), or else recognised from the messages themselves (*transparent*:
a client that resends its whole history keeps the same opening, so the id is a digest
of its first user message: ``lt_`` + 24 hex digits).

Then the request's messages are laid against the stored turns (roles, text, tool
calls with their arguments compared as JSON values, tool-call ids), as ``copage
serve`` reads the shapes of ``messages`` (docs/serve.md, "Shapes of messages"):

* ``continue``: the whole stored history then new messages, a suffix of it then new
  messages, or (no assistant message among them) only new messages;
* ``retry``: the request asks again what the stored history already answered (it is
  a prefix of the stored turns ending with a user or tool message): paged like the
  original, nothing is stored a second time;
* ``mismatch``: anything else (an edited or unrelated history).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from copage.core.types import Turn
from copage.ids import check_conversation_id
from copage.llm.chat_messages import text_of

__all__ = ["HEADER", "META_KEY", "Alignment", "align", "conversation_of", "message_key",
           "transparent_id", "turn_key"]

HEADER = "x-copage-conversation"
META_KEY = "copage_conversation"
SYSTEM_ROLES = ("system", "developer")

Key = tuple[str, str, tuple[tuple[str, str], ...], str]


@dataclass(frozen=True, slots=True)
class Alignment:
    """How a request's messages lie against the stored turns (see module docstring)."""

    kind: Literal["continue", "retry", "mismatch"]
    new: tuple[Mapping[str, Any], ...] = ()


def _args(arguments: Any) -> str:
    """Tool-call arguments as a canonical JSON text (so ``{"a": 1}`` equals ``{"a":1}``)."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    try:
        return json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    except (ValueError, TypeError):
        return text


def message_key(m: Mapping[str, Any]) -> Key:
    """A request message as compared with a stored turn."""
    calls = tuple((str((c.get("function") or {}).get("name", "")),
                   _args((c.get("function") or {}).get("arguments", "")))
                  for c in (m.get("tool_calls") or ()) if isinstance(c, Mapping))
    return (str(m.get("role", "")), text_of(m.get("content")).strip(), calls,
            str(m.get("tool_call_id") or ""))


def turn_key(t: Turn) -> Key:
    """A stored turn as compared with a request message."""
    calls = tuple((c.name, _args(c.arguments)) for c in t.tool_calls)
    return (t.role, t.text.strip(), calls, t.tool_call_id or "")


def align(turns: Sequence[Turn], messages: Sequence[Mapping[str, Any]]) -> Alignment:
    """Lay the request's non-system ``messages`` against the stored ``turns``."""
    msgs = [m for m in messages if m.get("role") not in SYSTEM_ROLES]
    if not turns:
        return Alignment("continue", tuple(msgs))
    keys = [message_key(m) for m in msgs]
    stored = [turn_key(t) for t in turns]
    n = len(stored)
    if len(keys) > n and keys[:n] == stored:  # the whole history, then new messages
        return Alignment("continue", tuple(msgs[n:]))
    if 0 < len(keys) <= n and keys == stored[:len(keys)] and keys[-1][0] in ("user", "tool"):
        return Alignment("retry")  # asks again what is already answered
    # the last few stored turns, then new messages: the longest such overlap
    for start in (i for i in range(max(0, n - len(keys) + 1), n) if stored[i] == keys[0]):
        k = n - start
        if len(keys) > k and keys[:k] == stored[start:]:
            return Alignment("continue", tuple(msgs[k:]))
    if not any(k[0] == "assistant" for k in keys):  # only new messages
        return Alignment("continue", tuple(msgs))
    return Alignment("mismatch")


def transparent_id(messages: Sequence[Mapping[str, Any]]) -> str:
    """The id a request without a name is recognised by: a digest of its first user
    message (the opening a client resending its history keeps)."""
    first = next((m for m in messages if m.get("role") == "user"),
                 next((m for m in messages if m.get("role") not in SYSTEM_ROLES), {}))
    digest = hashlib.sha256(text_of(first.get("content")).encode("utf-8", "surrogatepass"))
    return "lt_" + digest.hexdigest()[:24]


def conversation_of(data: Mapping[str, Any], *, use_user: bool) -> tuple[str, bool]:
    """The request's conversation id and whether it was named (not recognised).

    Raises:
        ValueError: a named id breaks the one id rule (:mod:`copage.ids`).
    """
    headers: Mapping[str, Any] = {}
    psr = data.get("proxy_server_request")
    if isinstance(psr, Mapping) and isinstance(psr.get("headers"), Mapping):
        headers = psr["headers"]
    meta = data.get("metadata")
    if not headers and isinstance(meta, Mapping) and isinstance(meta.get("headers"), Mapping):
        headers = meta["headers"]
    named = next((v for k, v in headers.items() if str(k).lower() == HEADER), None)
    what = "the X-Copage-Conversation header"
    if not named and isinstance(meta, Mapping) and meta.get(META_KEY):
        named, what = meta[META_KEY], f"metadata.{META_KEY}"
    if not named and use_user and data.get("user"):
        named, what = data["user"], "the user field"
    if named:
        return check_conversation_id(str(named), what=what), True
    return transparent_id(data.get("messages") or ()), False
