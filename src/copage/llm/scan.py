"""Reading model replies leniently: where a bracketed value ends.

Shared by the text tool-call protocol (:mod:`copage.llm.textproto`) and the keyword
generators' reply parser (:mod:`copage.eval.llmkeywords.parse`).
"""

from __future__ import annotations


def balanced_end(text: str, start: int, *, opens: str = "{", closes: str = "}",
                 quotes: str = '"', limit: int | None = None) -> int:
    """End (exclusive) of the bracketed value opening at ``start``, or -1 if it stays open.

    Brackets in ``opens``/``closes`` are counted (any closer closes any opener); text
    inside the ``quotes`` characters is skipped, backslash escapes respected. ``limit``
    bounds how far ahead it looks (many unclosed brackets then cost linear time).
    """
    depth = 0
    quote: str | None = None
    escaped = False
    stop = len(text) if limit is None else min(len(text), start + limit)
    for i in range(start, stop):
        ch = text[i]
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in quotes:
            quote = ch
        elif ch in opens:
            depth += 1
        elif ch in closes:
            depth -= 1
            if depth == 0:
                return i + 1
    return -1
