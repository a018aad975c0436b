"""Reading server-sent events incrementally (the ``text/event-stream`` of streamed completions).

Follows the WHATWG event-stream rules the OpenAI-compatible servers use: lines end
with ``\\n``, ``\\r\\n`` or ``\\r``; ``data:`` lines of one event are joined with
``\\n``; a blank line dispatches the event; ``:`` lines are comments (keep-alives);
other fields (``event``, ``id``, ``retry``) are ignored. Bytes may be split
anywhere across pieces, even inside a UTF-8 character.
"""

from __future__ import annotations

import codecs
from collections.abc import AsyncIterator

#: An event larger than this is refused (a hostile or broken upstream).
MAX_EVENT = 8 * 1024 * 1024


class EventTooLarge(ValueError):
    """One event's data exceeded :data:`MAX_EVENT` characters."""


async def events(pieces: AsyncIterator[bytes], max_event: int = MAX_EVENT
                 ) -> AsyncIterator[str]:
    """The ``data`` of each event, as soon as its terminating blank line has arrived."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    buffer = ""
    data: list[str] = []
    size = 0
    async for piece in pieces:
        buffer += decoder.decode(piece)
        *lines, buffer = _split(buffer)
        if len(buffer) > max_event:
            raise EventTooLarge(f"an event line over {max_event} characters")
        for line in lines:
            if not line:
                if data:
                    yield "\n".join(data)
                data, size = [], 0
            elif line.startswith("data:"):
                value = line[5:]
                data.append(value.removeprefix(" "))
                size += len(value)
                if size > max_event:
                    raise EventTooLarge(f"an event over {max_event} characters")
    buffer += decoder.decode(b"", final=True)
    if buffer.startswith("data:"):
        value = buffer[5:]
        data.append(value.removeprefix(" "))
    if data:
        yield "\n".join(data)


def _split(text: str) -> list[str]:
    """Lines of ``text``; the last item is the unfinished rest ('' after a line end).

    A trailing ``\\r`` stays in the rest: it may be the first half of ``\\r\\n``.
    """
    if text.endswith("\r"):
        *lines, rest = _split(text[:-1])
        return [*lines, rest + "\r"]
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
