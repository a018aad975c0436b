"""Parsing a chat request body so that a resent history is not parsed again.

A client that resends its whole history sends, byte for byte, the body of its
previous request up to the end of that request's last message, then the answer
it got and its new messages. :func:`parse_body` is given the prefixes of earlier
requests it may continue (:class:`Known`); when the body starts with one of them
(one ``str.startswith``, a memory comparison), the messages inside it are not
parsed at all: only the top-level fields around them and the messages after the
prefix are. A request's cost then grows with its new messages, not with the
conversation (the bytes are still received and compared, at memory speed).

Everything else is parsed as :func:`json.loads` would, except that ``NaN`` and
``Infinity`` (which Python accepts and JSON does not), numbers too large for a
float (``1e999``, which Python reads as infinity and would forward as
``Infinity``) and a repeated top-level ``messages`` key are refused. Each
top-level value is parsed by the C scanner of the :mod:`json` module, so a body without a known prefix costs what
``json.loads`` costs.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

_WS = re.compile(r"[ \t\n\r]*")
#: Bodies are grouped by their first characters to find the prefixes they may continue.
BUCKET = 64


class BodyError(ValueError):
    """The body is not a JSON object this proxy accepts (the message says why)."""


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (numbers must be finite)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999: Python makes it inf, which no upstream accepts
        raise ValueError(f"{text} is out of range (numbers must be finite)")
    return value


_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)
_SCAN = _DECODER.scan_once  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Known:
    """An earlier request's body up to the end of its last message, and how many there were."""

    prefix: str
    count: int


class Messages(Sequence[Any]):
    """The request's ``messages``: the first ``known`` ones lie in a known prefix and are
    parsed only if asked for; the rest were parsed with the body."""

    def __init__(self, text: str, start: int, known: int, tail: list[Any],
                 matched: Known | None = None) -> None:
        self._text, self._start, self.known = text, start, known
        self._tail = tail
        self._all: list[Any] | None = tail if known == 0 else None
        #: The known prefix these messages continue (None: all were parsed).
        self.matched = matched
        #: The body up to the end of the last message: what the next request may continue.
        self.prefix = ""

    @classmethod
    def of(cls, items: Sequence[Any]) -> Messages:
        """Messages from a parsed list (no known prefix, no text)."""
        return cls("", 0, 0, list(items))

    def known_prefix(self) -> Known | None:
        """This request as a :class:`Known` for the next one (None without its text)."""
        return Known(self.prefix, len(self)) if self.prefix else None

    def __len__(self) -> int:
        return self.known + len(self._tail)

    @overload
    def __getitem__(self, i: int) -> Any: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Any]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, int) and i >= 0 and i >= self.known:
            return self._tail[i - self.known]
        if isinstance(i, int) and i < 0 and -i <= len(self._tail):
            return self._tail[i]
        return self.all()[i]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Messages):
            return self.all() == other.all()
        if isinstance(other, (list, tuple)):
            return self.all() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def all(self) -> list[Any]:
        """Every message (the known prefix parsed now, once)."""
        if self._all is None:
            value, _ = _SCAN(self._text, self._start)
            self._all = value
        return self._all


@dataclass(frozen=True, slots=True)
class Body:
    """A parsed body: its fields, its messages (whose ``prefix`` the next request may
    continue), and the earlier request it continues."""

    fields: dict[str, Any]
    messages: Messages | None
    #: The earlier request this one continues (its prefix matched), if any.
    continues: Known | None

    @property
    def data(self) -> dict[str, Any]:
        """The fields with ``messages``: what :func:`~copage.server.request.parse_call` takes."""
        return {**self.fields, "messages": self.messages} if self.messages is not None \
            else dict(self.fields)


def decode(raw: bytes) -> str:
    """The body's text (UTF-8, -16 or -32 as JSON allows), or a :class:`BodyError`."""
    try:
        return raw.decode(json.detect_encoding(raw), "surrogatepass")
    except UnicodeDecodeError as e:
        raise BodyError(f"the request body is not valid JSON ({e})") from None


def match_known(text: str, known: Iterable[Known]) -> Known | None:
    """The longest of ``known`` that ``text`` starts with, followed by more messages or the
    end of the list (a memory comparison each, stopping at the first difference)."""
    match: Known | None = None
    for k in known:
        if (len(k.prefix) < len(text) and (match is None or len(k.prefix) > len(match.prefix))
                and text.startswith(k.prefix)):
            j = _ws(text, len(k.prefix))
            if text[j:j + 1] in (",", "]"):
                match = k
    return match


def parse_body(text: str, match: Known | None = None) -> Body:
    """Parse ``text`` (a JSON object), skipping the messages of ``match`` (a known prefix
    it starts with, see :func:`match_known`); :class:`BodyError` if it is not valid."""
    try:
        return _parse(text, match)
    except BodyError:
        raise
    except RecursionError:
        raise BodyError("the request body is nested too deeply") from None
    except (ValueError, StopIteration, IndexError) as e:
        raise BodyError(f"the request body is not valid JSON ({_reason(e)})") from None


def _reason(e: Exception) -> str:
    if isinstance(e, StopIteration):
        return f"unexpected content at character {e.value}"
    return str(e)


def _ws(text: str, i: int) -> int:
    return _WS.match(text, i).end()  # type: ignore[union-attr]


def _parse(text: str, match: Known | None) -> Body:
    i = _ws(text, 0)
    if text[i:i + 1] != "{":
        _DECODER.decode(text)  # not JSON: its error; other JSON: not an object
        raise BodyError("the request body must be a JSON object")
    fields: dict[str, Any] = {}
    messages: Messages | None = None
    prefix_end = 0
    i = _ws(text, i + 1)
    if text[i:i + 1] == "}":
        i += 1
    else:
        while True:
            if text[i:i + 1] != '"':
                raise StopIteration(i)
            key, i = _SCAN(text, i)
            i = _ws(text, i)
            if text[i:i + 1] != ":":
                raise StopIteration(i)
            i = _ws(text, i + 1)
            if key == "messages":
                if messages is not None:
                    raise BodyError("the request body has two 'messages' fields")
                value, i, prefix_end = _messages(text, i, match)
                if not isinstance(value, Messages):
                    fields[key] = value  # not a list: parse_call says so
                else:
                    messages = value
            else:
                fields[key], i = _SCAN(text, i)
            i = _ws(text, i)
            sep = text[i:i + 1]
            if sep == "}":
                i += 1
                break
            if sep != ",":
                raise StopIteration(i)
            i = _ws(text, i + 1)
    if _ws(text, i) != len(text):
        raise ValueError(f"Extra data at character {i}")
    if messages is None or (match is not None and messages.known != match.count):
        match = None
    if isinstance(messages, Messages):
        messages.matched = match
        messages.prefix = text[:prefix_end] if prefix_end else ""
    return Body(fields, messages, match)


def _messages(text: str, i: int, match: Known | None) -> tuple[Messages | Any, int, int]:
    """The ``messages`` value at ``i``: (value, end, end of its last element)."""
    start = i
    if text[i:i + 1] != "[":
        value, end = _SCAN(text, i)
        return value, end, 0
    known = 0
    tail: list[Any] = []
    last_end = 0
    if match is not None and i < len(match.prefix):
        known, i = match.count, len(match.prefix)
        last_end = i
        i = _ws(text, i)
        if text[i:i + 1] == ",":
            i = _ws(text, i + 1)
        elif text[i:i + 1] != "]":
            raise StopIteration(i)
    else:  # no known prefix: the whole list in one C call
        value, end = _SCAN(text, i)
        j = end - 1  # the closing "]"; the last message ends before the blanks ahead of it
        while j > start and text[j - 1] in " \t\n\r":
            j -= 1
        return Messages(text, start, 0, value), end, (j if value else 0)
    if text[i:i + 1] == "]":
        return Messages(text, start, known, tail), i + 1, last_end
    while True:
        value, i = _SCAN(text, i)
        tail.append(value)
        last_end = i
        i = _ws(text, i)
        sep = text[i:i + 1]
        if sep == "]":
            return Messages(text, start, known, tail), i + 1, last_end
        if sep != ",":
            raise StopIteration(i)
        i = _ws(text, i + 1)
