"""Parameter and cut validation shared by the boundary strategies."""

from __future__ import annotations

from collections.abc import Sequence


class BoundaryParameterError(ValueError):
    """A boundary strategy got a bad parameter value (e.g. ``fixed_0``); unknown options
    raise :class:`copage.core.registry.UnknownOptionError`."""


def positive_int(strategy: str, option: str, value: object) -> int:
    """``value`` as an int >= 1, or a clear :class:`BoundaryParameterError`."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise BoundaryParameterError(
            f"boundary {strategy!r}: {option} must be a whole number >= 1, got {value!r}"
        )
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise BoundaryParameterError(
            f"boundary {strategy!r}: {option} must be a whole number >= 1, got {value!r}"
        )
    return n


def check_cuts(cuts: Sequence[int], n: int, *, final: bool, name: str) -> None:
    """Check that ``cuts`` obeys the ``cuts()`` contract for a buffer of ``n`` turns."""
    last = 0
    for c in cuts:
        if not isinstance(c, int) or c <= last or c > n:
            raise ValueError(
                f"boundary {name!r} returned invalid cuts {list(cuts)} for {n} turns: "
                "cuts must be strictly increasing integers in 1..len(buffer)"
            )
        last = c
    if final and n > 0 and last != n:
        raise ValueError(f"boundary {name!r}: with final=True the last cut must be {n}, got {last}")
