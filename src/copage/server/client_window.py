"""A client that trims its own history: its window continues a stored conversation.

LangChain's ``trim_messages`` and many chat apps keep the system prompt and the last
few messages, so a transparent request no longer starts with the conversation's first
message and its prefix hashes match nothing. The window still holds the stored
conversation's last exchange (the request's last message and the answer), whose key
(:func:`copage.server.transcript.tail_of`) the index keeps per conversation: one
conversation with that key is a guess, checked under its lock (every message of the
window before its new ones must be the end of the stored transcript, see
:func:`copage.server.plan.overlap`). Two conversations with that key, or a window that
does not hold that exchange whole, start a new conversation, logged once.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence

from copage.server.recognise import Guess
from copage.server.request import Message
from copage.server.transcript import TranscriptIndex, tail_of

log = logging.getLogger("copage.server")
_LOGGED: OrderedDict[tuple[str, str], None] = OrderedDict()
_MUTEX = threading.Lock()


def window_guess(index: TranscriptIndex, tenant: str, msgs: Sequence[Message], start: str
                 ) -> Guess | None:
    """The conversation whose last exchange the window ``msgs`` holds before its new
    messages (``continue`` at the message after that answer, flagged ``window``), or None."""
    p = next((i for i in range(len(msgs) - 2, 0, -1) if msgs[i].role == "assistant"), None)
    if p is None:
        return None
    asked = next((i for i in range(p - 1, -1, -1) if msgs[i].role != "system"), None)
    if asked is None or msgs[asked].role == "assistant":
        return None
    rows = index.find_tail(tenant, tail_of(msgs[asked], msgs[p], start))
    if len(rows) != 1:
        if rows:
            overlapping(tenant, rows[0][0], "its last exchange is also another conversation's")
        return None
    cid, head = rows[0]
    return Guess("continue", cid, start=p + 1, head=head, window=True)


def overlapping(tenant: str, cid: str, why: str) -> None:
    """Log once per conversation that a request starts a new conversation although its
    messages overlap ``cid`` (a client that trims or edits its history)."""
    with _MUTEX:
        if (tenant, cid) in _LOGGED:
            return
        _LOGGED[(tenant, cid)] = None
        while len(_LOGGED) > 4096:
            _LOGGED.popitem(last=False)
    log.warning("a request starts a new conversation although its messages overlap "
                "conversation %s of tenant %s (%s); a client that trims or edits its "
                "history is recognised only while its window holds the last exchange",
                cid, tenant, why)
