"""``segment``: penalised optimal segmentation by dynamic programming (beyond the paper).

Turns become L2-normalised TF-IDF vectors (IDF within the buffer). A page costs its
dispersion, the sum of squared distances of its turn vectors to their centroid
(the within-segment sum of squares of Fisher 1958 "On grouping for maximum
homogeneity"; the penalised form is the optimal-partitioning recursion of Jackson
et al. 2005 and Killick et al. 2012). Total cost = sum of page costs + lambda * pages.

Calibration rule (fixed in advance): lambda is found by bisection so that the number
of pages is the closest achievable to round(n / target) (ties go to fewer pages):
the penalty is set by the data's own scale and the mean page length follows
``target``, so it cannot over-fragment. Pages hold ``min_len..max_len`` turns; with
``use_sessions`` session changes are forced cuts, and a session shorter than
``min_len`` (or too short to split) is one page. With ``exchanges`` (default), a page
never starts with the reply to a user message that ends the previous page: a
question and its answer stay together (when the conversation has user turns; if
that constraint leaves no feasible cut, it is dropped for that stretch).
Cost: O(n * max_len) per lambda.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from copage.core.registry import check_options
from copage.core.types import Turn

from ._common import positive_int
from .vectors import Matrix, count_matrix, tfidf_rows

_BISECT_STEPS = 40


class _Chunk:
    """Per-segment costs of one stretch between forced cuts, reused for every lambda."""

    def __init__(
        self, start: int, stop: int, gram_prefix: Matrix, sq: Matrix, min_len: int, max_len: int
    ) -> None:
        self.start, self.size = start, stop - start
        self.single = self.size < 2 * min_len
        self.costs: list[tuple[int, Matrix]] = []  # per end j: (lo, cost of pages lo..hi -> j)
        if self.single:
            return
        q, a = gram_prefix, start
        for j in range(min_len, self.size + 1):
            lo, hi = max(0, j - max_len), j - min_len
            i = np.arange(lo, hi + 1) + a
            e = a + j
            block = q[e, e] - q[i, e] - q[e, i] + q[i, i]
            self.costs.append((lo, (sq[e] - sq[i]) - block / (e - i)))

    def solve(self, lam: float, min_len: int, blocked: Sequence[bool] = ()) -> list[int]:
        """Optimal cut positions (absolute, including the chunk end) for penalty ``lam``.

        ``blocked[e]`` (absolute position) forbids a page boundary before turn ``e``;
        if that leaves no feasible segmentation, the chunk is solved without it.
        """
        if self.single:
            return [self.start + self.size]
        f = np.full(self.size + 1, np.inf)
        back = np.zeros(self.size + 1, dtype=np.int64)
        f[0] = 0.0
        for off, (lo, cost) in enumerate(self.costs):
            j = off + min_len
            if blocked and j < self.size and blocked[self.start + j]:
                continue
            vals = f[lo : lo + len(cost)] + cost
            k = int(np.argmin(vals))
            f[j], back[j] = vals[k] + lam, lo + k
        if not np.isfinite(f[self.size]):
            return self.solve(lam, min_len) if blocked else [self.start + self.size]
        out, j = [], self.size
        while j > 0:
            out.append(self.start + j)
            j = int(back[j])
        return out[::-1]


def exchange_blocks(turns: Sequence[Turn]) -> list[bool]:
    """``blocked[i]``: a page may not start at turn ``i`` because it would separate a
    user message from the reply to it (used when the conversation has user turns)."""
    if not any(t.role == "user" for t in turns):
        return []
    return [i > 0 and turns[i].role != "user" and turns[i - 1].role == "user"
            for i in range(len(turns))]


def optimal_cuts(
    turns: Sequence[Turn], forced: Sequence[int], *, target: int, min_len: int, max_len: int,
    exchanges: bool = False,
) -> list[int]:
    """All page ends (the last is ``len(turns)``) of the calibrated penalised segmentation."""
    n = len(turns)
    if n == 0:
        return []
    blocked = exchange_blocks(turns) if exchanges else []
    x = tfidf_rows(count_matrix(turns))
    gram = x @ x.T
    q = np.zeros((n + 1, n + 1))
    q[1:, 1:] = gram.cumsum(axis=0).cumsum(axis=1)
    sq = np.concatenate([[0.0], np.cumsum(np.diag(gram))])
    bounds = [0, *sorted({c for c in forced if 0 < c < n}), n]
    chunks = [_Chunk(a, b, q, sq, min_len, max_len) for a, b in pairwise(bounds)]

    def run(lam: float) -> list[int]:
        return [c for ch in chunks for c in ch.solve(lam, min_len, blocked)]

    hi_lam = float(sq[-1]) + 1.0  # above any achievable gain: fewest pages
    fewest, most = run(hi_lam), run(0.0)
    want = min(max(int(n / target + 0.5), len(fewest)), len(most))
    if len(most) <= want:
        return most
    lo_lam, best_hi = 0.0, fewest
    for _ in range(_BISECT_STEPS):
        mid = (lo_lam + hi_lam) / 2.0
        got = run(mid)
        if len(got) > want:
            lo_lam, most = mid, got
        else:
            hi_lam, best_hi = mid, got
            if len(got) == want:
                break
    return best_hi if want - len(best_hi) <= len(most) - want else most


def session_breaks(turns: Sequence[Turn]) -> list[int]:
    """Positions i where ``turns[i].session`` differs from the turn before."""
    return [i for i in range(1, len(turns)) if turns[i].session != turns[i - 1].session]


class Segment:
    """Penalised optimal segmentation (see module docstring).

    Incremental use (``final=False``): when a session break is in the buffer (and
    ``use_sessions``), everything before the last break is segmented and committed;
    when the buffer passes ``max_len`` turns, it is segmented and every cut but the
    last page's is committed. So the open page never holds more than ``max_len``
    turns, the size bound of every closed page: it is always resident, and a larger
    one would keep the prompt as big as the conversation.
    """

    def __init__(
        self,
        target: int = 20,
        min_len: int | None = None,
        max_len: int | None = None,
        use_sessions: bool = True,
        exchanges: bool = True,
    ) -> None:
        self.target = positive_int("segment", "target", target)
        self.min_len = positive_int(
            "segment", "min_len", min_len if min_len is not None else max(1, (2 * self.target) // 5)
        )
        self.max_len = positive_int(
            "segment", "max_len", max_len if max_len is not None else 2 * self.target
        )
        if not self.min_len <= self.target <= self.max_len or self.max_len < 2 * self.min_len - 1:
            raise ValueError(
                "segment: need min_len <= target <= max_len and max_len >= 2*min_len - 1, got "
                f"min_len={self.min_len}, target={self.target}, max_len={self.max_len}"
            )
        self.use_sessions = bool(use_sessions)
        self.exchanges = bool(exchanges)
        self.bound = self.max_len  # the open page never holds more turns than this
        self.name = "segment"

    def _forced(self, turns: Sequence[Turn]) -> list[int]:
        return session_breaks(turns) if self.use_sessions else []

    def _segment(self, turns: Sequence[Turn]) -> list[int]:
        return optimal_cuts(
            turns,
            self._forced(turns),
            target=self.target,
            min_len=self.min_len,
            max_len=self.max_len,
            exchanges=self.exchanges,
        )

    def cuts(self, turns: Sequence[Turn], *, final: bool) -> list[int]:
        """Page ends decided for this buffer (see the class docstring)."""
        n = len(turns)
        if final:
            return self._segment(turns)
        forced = self._forced(turns)
        if n > self.bound:
            # Every page but the last is decided; the last one (at most max_len turns,
            # by the segmentation's own page bound) stays open.
            return self._segment(turns)[:-1]
        return self._segment(turns[: forced[-1]]) if forced else []

    def __repr__(self) -> str:
        return (
            f"Segment(target={self.target}, min_len={self.min_len}, "
            f"max_len={self.max_len}, use_sessions={self.use_sessions}, "
            f"exchanges={self.exchanges})"
        )


def make_segment(**options: object) -> Segment:
    """Registry factory for ``segment`` (target, min_len, max_len, use_sessions)."""
    check_options(
        "boundary 'segment'", options, ["target", "min_len", "max_len", "use_sessions", "exchanges", "tokenizer"]
    )
    ml, mx = options.get("min_len"), options.get("max_len")
    return Segment(
        target=positive_int("segment", "target", options.get("target", 20)),
        min_len=None if ml is None else positive_int("segment", "min_len", ml),
        max_len=None if mx is None else positive_int("segment", "max_len", mx),
        use_sessions=bool(options.get("use_sessions", True)),
        exchanges=bool(options.get("exchanges", True)),
    )
