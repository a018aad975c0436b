"""The one rule for conversation ids, shared by every front end.

The proxy (``X-Copage-Conversation``, the inspector's URLs), the MCP tools, the
LangChain middleware (its ``thread_id``) and the OpenAI Agents session all name
conversations by id; an id one of them
creates (the Agents session's ``ID~pop`` twin, say) must be one the others
accept. An id is 1-128 ASCII letters, digits and ``_ . : @ ~ -``, starting with
a letter or digit: safe in an HTTP header, a URL path segment and a file name.
Each front end reports a bad id in its own shape (a 400, an MCP tool error, a
``ValueError``) with :data:`CONVERSATION_ID_RULE` as the explanation.
"""

from __future__ import annotations

import re

#: The longest conversation id.
MAX_CONVERSATION_ID = 128
CONVERSATION_ID_RULE = (f"1-{MAX_CONVERSATION_ID} characters of letters, digits, '_', '.', "
                        "':', '@', '~' or '-', starting with a letter or digit")
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@~\-]*\Z")


class InvalidConversationId(ValueError):
    """A conversation id that breaks the rule (the message states the rule)."""


def is_conversation_id(value: object, *, max_len: int = MAX_CONVERSATION_ID) -> bool:
    """Whether ``value`` is a valid conversation id of at most ``max_len`` characters."""
    return (isinstance(value, str) and 0 < len(value) <= max_len
            and _ID.match(value) is not None)


def check_conversation_id(value: object, *, max_len: int = MAX_CONVERSATION_ID,
                          what: str = "a conversation id") -> str:
    """``value`` if it is a valid conversation id, else :class:`InvalidConversationId`.

    ``max_len`` below the maximum leaves room for a suffix the caller adds (the
    Agents session's ``~pop``); ``what`` names the value in the message.
    """
    if not is_conversation_id(value, max_len=max_len):
        rule = CONVERSATION_ID_RULE if max_len == MAX_CONVERSATION_ID else \
            CONVERSATION_ID_RULE.replace(f"1-{MAX_CONVERSATION_ID}", f"1-{max_len}")
        raise InvalidConversationId(f"{what} must be {rule}; got {str(value)[:60]!r}")
    assert isinstance(value, str)
    return value
