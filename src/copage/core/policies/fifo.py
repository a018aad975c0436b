"""FIFO: evict the page that entered the resident set earliest."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from copage.core.policies.policy import EvictionPolicy, History
from copage.core.types import PageId


class FIFOPolicy(EvictionPolicy):
    """First in, first out (Belady 1966's FIFO); a page-in counts as entering anew."""

    name: ClassVar[str] = "fifo"

    def victim(self, candidates: Sequence[PageId], history: History, now: int) -> PageId:
        """The candidate that entered the resident set earliest."""
        return min(candidates, key=history.entered.__getitem__)
