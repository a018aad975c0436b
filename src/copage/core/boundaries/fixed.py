"""Size-based boundaries: ``fixed_N`` (N turns a page) and ``tokens_N`` (about N tokens)."""

from __future__ import annotations

from collections.abc import Sequence

from copage.core.registry import check_options
from copage.core.tokens import Tokenizer, default_tokenizer
from copage.core.types import Turn, render_turn

from ._common import positive_int


class FixedTurns:
    """Pages of exactly ``n`` turns (the last page may be shorter); the paper's ``fixed_N``."""

    def __init__(self, n: int) -> None:
        self.n = positive_int(f"fixed_{n}", "N", n)
        self.name = f"fixed_{self.n}"

    def cuts(self, turns: Sequence[Turn], *, final: bool) -> list[int]:
        """Every ``n`` turns, plus the end of the buffer when ``final``."""
        out = list(range(self.n, len(turns) + 1, self.n))
        if final and turns and (not out or out[-1] != len(turns)):
            out.append(len(turns))
        return out

    def __repr__(self) -> str:
        return f"FixedTurns(n={self.n})"


class TokenBudget:
    """Pages of at most about ``n`` tokens, never splitting a turn.

    A page is closed before the turn that would take it past ``n`` tokens, unless the
    page is empty: a single turn larger than ``n`` becomes a page of its own. A turn
    costs the tokens of its rendered line (``render_turn``), as page text does.
    """

    def __init__(self, n: int, tokenizer: Tokenizer | None = None) -> None:
        self.n = positive_int(f"tokens_{n}", "N", n)
        self.name = f"tokens_{self.n}"
        self.tokenizer = tokenizer if tokenizer is not None else default_tokenizer()

    def cuts(self, turns: Sequence[Turn], *, final: bool) -> list[int]:
        """Greedy token-budget cuts; a cut is decided once the turn after it exists."""
        out: list[int] = []
        used = 0
        for i, turn in enumerate(turns):
            cost = self.tokenizer.count(render_turn(turn))
            if i > (out[-1] if out else 0) and used + cost > self.n:
                out.append(i)
                used = 0
            used += cost
        if final and turns and (not out or out[-1] != len(turns)):
            out.append(len(turns))
        return out

    def __repr__(self) -> str:
        return f"TokenBudget(n={self.n}, tokenizer={self.tokenizer.name!r})"


def make_fixed(n: str, **options: object) -> FixedTurns:
    """Registry factory for ``fixed_N`` (accepts and ignores ``tokenizer``)."""
    check_options(f"boundary 'fixed_{n}'", options, ["tokenizer"])
    return FixedTurns(positive_int(f"fixed_{n}", "N", n))


def make_tokens(n: str, **options: object) -> TokenBudget:
    """Registry factory for ``tokens_N``."""
    check_options(f"boundary 'tokens_{n}'", options, ["tokenizer"])
    tok = options.get("tokenizer")
    if tok is not None and not hasattr(tok, "count"):
        raise TypeError(f"tokens_{n}: tokenizer must have a count(text) method, got {tok!r}")
    return TokenBudget(positive_int(f"tokens_{n}", "N", n), tok)  # type: ignore[arg-type]
