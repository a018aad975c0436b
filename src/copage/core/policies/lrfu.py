"""LRFU: a recency/frequency hybrid with one knob, lambda."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from copage.core.policies.policy import JSON, EvictionPolicy, History, Limit
from copage.core.types import PageId


class LRFUPolicy(EvictionPolicy):
    """Least Recently/Frequently Used (Lee et al., IEEE Trans. Computers 50(12), 2001).

    A page's combined recency and frequency (CRF) is ``sum over its accesses of
    2**(-lam * age)``, age counted in accesses (the cache clock), not seconds.
    It is kept incrementally, O(1) per access:
    ``C(t_k) = 1 + 2**(-lam * (t_k - t_{k-1})) * C(t_{k-1})``.
    Scores are compared in log2 space (``log2 C + lam * t_last``, the common
    ``-lam * now`` dropped), so long traces never underflow.

    ``lam=0`` is exactly LFU (score = access count, ties by LRU) and ``lam=1`` is
    exactly LRU (the newest access outweighs all older ones together). For
    ``0 < lam < 1`` and equal counts LRFU evicts the page whose accesses are
    older overall, which is not always LFU's least-recently-used tie-break.
    Exact score ties fall back to least recent use.
    """

    name: ClassVar[str] = "lrfu"

    def __init__(self, lam: float = 0.3) -> None:
        if isinstance(lam, bool) or not isinstance(lam, int | float) or not 0 <= lam <= 1:
            raise ValueError(f"lrfu lam must be a number in [0, 1] (Lee et al.), got {lam!r}")
        self.lam = float(lam)
        self._crf: dict[PageId, float] = {}
        self._last: dict[PageId, int] = {}

    def bind(self, limit: Limit) -> None:
        """Forget all scores."""
        self._crf.clear()
        self._last.clear()

    def observe(self, pid: PageId, history: History, now: int) -> None:
        """Fold one access into the page's CRF."""
        old = self._crf.get(pid)
        if old is None:
            self._crf[pid] = 1.0
        else:
            self._crf[pid] = 1.0 + 2.0 ** (-self.lam * (now - self._last[pid])) * old
        self._last[pid] = now

    def score(self, pid: PageId) -> float:
        """``log2`` of the CRF at time 0 (comparable across pages at any one time)."""
        return math.log2(self._crf[pid]) + self.lam * self._last[pid]

    def victim(self, candidates: Sequence[PageId], history: History, now: int) -> PageId:
        """The candidate with the lowest CRF; exact ties by least recent use."""
        return min(candidates, key=lambda p: (self.score(p), history.last[p]))

    def state(self) -> JSON:
        """CRF values and their reference times."""
        return {"crf": dict(self._crf), "last": dict(self._last)}

    def load_state(self, state: JSON) -> None:
        """Restore CRF values."""
        self._crf = {str(p): float(v) for p, v in state["crf"].items()}
        self._last = {str(p): int(v) for p, v in state["last"].items()}

    def __repr__(self) -> str:
        return f"LRFUPolicy(lam={self.lam})"
