"""Defensive parsing of model output into keyword lists.

Models wrap JSON in code fences, add prose around it (with braces of its own),
use single quotes, leave trailing commas, stop mid-object, key pages as
``"page 3"``, ``"P3"`` or ``3``, or skip JSON altogether and write ``p1: a, b``
lines or bullet lists. :func:`parse_page_keywords` repairs what it can and
returns only what it could read; a truncated reply's unfinished last element is
dropped (never kept cut short); callers fall back to an offline extractor for
the rest.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from copage.core.types import PageId, normal_page_id
from copage.llm.scan import balanced_end

_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)(?:```|\Z)", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_MAX_KEYWORD_CHARS = 60


def strip_fences(text: str) -> str:
    """The content of the first fenced block, else ``text`` unchanged."""
    m = _FENCE.search(text)
    return m.group(1) if m else text


def _close_truncated(text: str) -> str:
    """Close what a truncated reply left open, dropping its unfinished last element.

    A string still open at the end is an element cut short: the text is cut back
    to the last complete element (after the last ``,`` or opening bracket outside
    strings) before the open lists and objects are closed.
    """
    stack: list[str] = []
    quote: str | None = None
    escaped = False
    cut = 0  # end of the text up to its last complete element
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
            cut = i + 1
        elif ch in "}]" and stack:
            stack.pop()
            cut = i + 1
        elif ch == ",":
            cut = i
    if not stack and quote is None:
        return text
    if quote is None:
        closed = text + "".join(reversed(stack))
        if _loads(closed) is not None:
            return closed
    if 0 < cut < len(text):
        return _close_truncated(text[:cut])
    return text + (quote or "") + "".join(reversed(stack))


def _loads(text: str) -> Any:
    """``json.loads`` then a Python-literal read (single quotes); None when both fail."""
    cleaned = _TRAILING_COMMA.sub(r"\1", text)
    try:
        return json.loads(cleaned)
    except ValueError:
        pass
    try:
        return ast.literal_eval(cleaned)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def load_json_lenient(text: str, opener: str = "{") -> Any:
    """Parse the first JSON value starting with ``opener`` in ``text``; None if hopeless.

    Handles code fences, surrounding prose, trailing commas, single quotes and
    truncation.
    """
    body = strip_fences(text)
    start = body.find(opener)
    if start < 0:
        return None
    body = body[start:]
    end = balanced_end(body, 0, opens="{[", closes="}]", quotes="\"'")
    if end > 0:  # the first complete value; prose after it may hold braces of its own
        return _loads(body[:end])
    closer = "}" if opener == "{" else "]"
    last = body.rfind(closer)
    if last >= 0:
        whole = _loads(body[: last + 1])
        if whole is not None:
            return whole
    return _loads(_close_truncated(body))


def page_key(key: object, valid: Sequence[PageId]) -> PageId | None:
    """Map ``"p3"``, ``"P3"``, ``"page 3"``, ``"3"`` or ``3`` to ``"p3"`` if it is valid
    (the one page-id parser, :func:`copage.core.types.normal_page_id`)."""
    pid = normal_page_id(key)
    return pid if pid in valid else None


def clean_keywords(value: object, limit: int) -> tuple[str, ...] | None:
    """Up to ``limit`` distinct keyword strings from a model value; None if unusable.

    A list of strings is expected; a comma-separated string is accepted; other
    items are skipped. Numbers become text.
    """
    if isinstance(value, str):
        items: list[object] = [part for part in value.split(",")]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        return None
    out: list[str] = []
    seen: set[str] = set()
    for item in items:
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            continue
        kw = " ".join(str(item).split()).strip(" \"'`.;:-")
        if not kw or len(kw) > _MAX_KEYWORD_CHARS or kw.lower() in seen:
            continue
        seen.add(kw.lower())
        out.append(kw)
        if len(out) == limit:
            break
    return tuple(out) if out else None


def parse_page_keywords(
    text: str, page_ids: Sequence[PageId], limit: int
) -> dict[PageId, tuple[str, ...]]:
    """Keywords per page from a reply shaped like ``{"p1": [...], "p2": [...]}``.

    Unknown pages (not in ``page_ids``) and unusable values are dropped; a page
    named twice keeps its first usable value.
    """
    data = load_json_lenient(text, "{")
    if not isinstance(data, Mapping):
        return _page_lines(text, page_ids, limit)
    if len(data) == 1:  # {"pages": {...}} or {"keywords": {...}}
        (only,) = data.values()
        if isinstance(only, Mapping):
            data = only
    out: dict[PageId, tuple[str, ...]] = {}
    for key, value in data.items():
        pid = page_key(key, page_ids)
        if pid is None or pid in out:
            continue
        kws = clean_keywords(value, limit)
        if kws:
            out[pid] = kws
    return out


_LINE_PAGE = re.compile(
    r"^\s*(?:[-*\u2022+]|\d{1,3}[.)])?\s*[*_`]*\[?\s*((?:page|pg)?\s*[#_\-]?\s*p?\s*\d{1,9})"
    r"\s*\]?[*_`]*\s*[:=\-\u2013\u2014]+\s*(.+?)\s*$",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:[-*\u2022+]|\d{1,3}[.)])\s+(.+?)\s*$")
_LABELLED = re.compile(r"^\s*[*_`]*keywords?[*_`]*\s*:\s*(.+?)\s*$", re.IGNORECASE)


def _split_items(text: str) -> list[str]:
    return [part for part in re.split(r"[,;]", text.strip().strip("[]")) if part.strip()]


def _page_lines(text: str, page_ids: Sequence[PageId], limit: int) -> dict[PageId, tuple[str, ...]]:
    """Keywords from ``p1: a, b`` lines (also ``- Page 2: c, d``, ``**p3** - e``)."""
    out: dict[PageId, tuple[str, ...]] = {}
    for line in strip_fences(text).splitlines():
        m = _LINE_PAGE.match(line)
        if not m:
            continue
        pid = page_key(m.group(1), page_ids)
        if pid is None or pid in out:
            continue
        kws = clean_keywords(_split_items(m.group(2)), limit)
        if kws:
            out[pid] = kws
    return out


def _list_lines(text: str, limit: int) -> tuple[str, ...] | None:
    """Keywords from a bullet or numbered list, or a ``Keywords: a, b`` line."""
    lines = strip_fences(text).splitlines()
    bullets = [m.group(1) for line in lines if (m := _BULLET.match(line))]
    if bullets:
        return clean_keywords(bullets, limit)
    for line in lines:
        m = _LABELLED.match(line)
        if m:
            return clean_keywords(_split_items(m.group(1)), limit)
    return None


def parse_keyword_list(text: str, limit: int) -> tuple[str, ...] | None:
    """Keywords from a reply holding one JSON list (or ``{"keywords": [...]}``), else a
    bullet list or a ``Keywords: a, b`` line; None if none."""
    data = load_json_lenient(text, "[")
    if data is None:
        obj = load_json_lenient(text, "{")
        if isinstance(obj, Mapping):
            data = next((v for v in obj.values() if isinstance(v, (list, str))), None)
    if data is None:
        return _list_lines(text, limit)
    return clean_keywords(data, limit) or _list_lines(text, limit)
