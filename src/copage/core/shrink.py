"""Evicting below the budget at once: when the model's context window turns out smaller
than the paging budget allows (the upstream answered that the request did not fit), the
pager gives up resident pages, by its eviction policy, until they hold at most a given
number of tokens. Beyond the paper (docs/paging-budget.md, "A window smaller than the
budget"). The pages evicted are bookmarked and recallable as any other; the pager's
state, stored with its snapshot, says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from copage.core.types import PageId

if TYPE_CHECKING:
    from copage.core.pager import Pager

__all__ = ["shrink"]


def shrink(pager: Pager, tokens: int) -> list[PageId]:
    """Evict resident closed pages, the policy's victims first (pages paged in this turn
    last), until they hold at most ``tokens`` tokens; the pages evicted, in order.

    Raises:
        ValueError: ``tokens`` is not an int >= 0.
    """
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        raise ValueError(f"tokens must be an int >= 0, got {tokens!r}")
    evicted = pager.cache.shrink(tokens, protect=pager._pins)
    for pid in evicted:
        pager._evicted(pid)
    if evicted:
        pager.grouped.lines = None
        pager._maybe_regroup()
    return evicted
