"""``session``: one page per conversation session (LoCoMo sessions)."""

from __future__ import annotations

from collections.abc import Sequence

from copage.core.registry import check_options
from copage.core.types import Turn

from ._common import positive_int


class SessionBoundary:
    """Cut exactly where ``Turn.session`` changes.

    Turns without session info (``session is None``) have no natural break, so each
    run of them is cut every ``fallback`` turns (default 20, i.e. ``fixed_20``).
    """

    def __init__(self, fallback: int = 20) -> None:
        self.fallback = positive_int("session", "fallback", fallback)
        self.name = "session"

    def cuts(self, turns: Sequence[Turn], *, final: bool) -> list[int]:
        """Session changes (decided once the first turn of the new session exists)."""
        out: list[int] = []
        start = 0
        for i in range(1, len(turns) + 1):
            changed = i < len(turns) and turns[i].session != turns[i - 1].session
            full = turns[i - 1].session is None and i - start == self.fallback
            if changed or full:
                out.append(i)
                start = i
        if final and turns and (not out or out[-1] != len(turns)):
            out.append(len(turns))
        return out

    def __repr__(self) -> str:
        return f"SessionBoundary(fallback={self.fallback})"


def make_session(**options: object) -> SessionBoundary:
    """Registry factory for ``session`` (option ``fallback``; ``tokenizer`` ignored)."""
    check_options("boundary 'session'", options, ["fallback", "tokenizer"])
    return SessionBoundary(positive_int("session", "fallback", options.get("fallback", 20)))
