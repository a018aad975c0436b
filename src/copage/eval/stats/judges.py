"""Agreement and averages across several LLM judges scoring the same items."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import numpy.typing as npt

from copage.eval.stats.correlation import as_float_array, pearson, spearman
from copage.eval.stats.krippendorff import krippendorff_alpha


@dataclass(frozen=True)
class PairAgreement:
    """Correlation of two judges over the items both scored."""

    judge_a: str
    judge_b: str
    n: int
    pearson: float
    spearman: float


@dataclass(frozen=True)
class MultiJudgeSummary:
    """Per-judge means, cross-judge item averages, pairwise correlations, ordinal alpha.

    ``item_means[i]`` is the mean of the judges that scored item i (NaN if none did);
    ``overall`` is the mean of those item means over items scored at least once.
    """

    judges: tuple[str, ...]
    n_items: int
    judge_means: dict[str, float]
    judge_counts: dict[str, int]
    item_means: tuple[float, ...]
    overall: float
    pairs: tuple[PairAgreement, ...]
    alpha_ordinal: float

    def pair(self, a: str, b: str) -> PairAgreement:
        """The agreement of judges ``a`` and ``b`` (in either order)."""
        for p in self.pairs:
            if {p.judge_a, p.judge_b} == {a, b} and a != b:
                return p
        raise KeyError(f"no judge pair ({a!r}, {b!r}); judges: {', '.join(self.judges)}")


def _nanmean(values: npt.NDArray[np.float64]) -> float:
    kept = values[np.isfinite(values)]
    return float(kept.mean()) if len(kept) else math.nan


def multi_judge_summary(scores: Mapping[str, Sequence[float | None]]) -> MultiJudgeSummary:
    """Summarise judges' scores of the same items (``None`` = the judge gave no score).

    As in the copage paper, section 4.5: per-judge means, the cross-judge average per
    item (the input to a paired bootstrap), pairwise Pearson and Spearman, and
    Krippendorff's alpha (ordinal) with items as units and judges as raters.
    """
    if not scores:
        raise ValueError("multi_judge_summary needs at least one judge")
    judges = tuple(scores)
    columns = [as_float_array(f"scores[{j!r}]", scores[j]) for j in judges]
    lengths = {j: len(c) for j, c in zip(judges, columns, strict=True)}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"judges scored different numbers of items: {lengths}")
    matrix = np.column_stack(columns)  # items x judges
    scored = np.isfinite(matrix)
    item_means = tuple(_nanmean(row) for row in matrix)
    pairs = tuple(
        PairAgreement(
            judge_a=judges[i],
            judge_b=judges[k],
            n=int(np.sum(scored[:, i] & scored[:, k])),
            pearson=pearson(matrix[:, i], matrix[:, k]),
            spearman=spearman(matrix[:, i], matrix[:, k]),
        )
        for i, k in combinations(range(len(judges)), 2)
    )
    return MultiJudgeSummary(
        judges=judges,
        n_items=matrix.shape[0],
        judge_means={j: _nanmean(matrix[:, i]) for i, j in enumerate(judges)},
        judge_counts={j: int(scored[:, i].sum()) for i, j in enumerate(judges)},
        item_means=item_means,
        overall=_nanmean(np.asarray(item_means, dtype=np.float64)),
        pairs=pairs,
        alpha_ordinal=krippendorff_alpha(matrix, "ordinal"),
    )
