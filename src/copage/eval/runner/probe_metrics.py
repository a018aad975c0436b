"""The loop's measures over probe records, one definition each (see ``docs/loop.md``).

* **trigger rate**: share of probes that needed an evicted page (after speculative
  page-in) in which the model called recall at least once. The paper's "recall
  triggered" figure (96.3% of 1,828 probes, GPT-4o-mini).
* **recall precision**: share of recall calls, over all probes, that named a needed
  page (status ``paged_in`` or ``resident``). Per call, like the paper's Table 13.
  Calls of unknown tools are not recall calls.
* **right-page rate**: share of triggered probes (needed an evicted page and called
  recall) in which a call paged in a needed page (the paper's 56.6%); naming a page
  that was already resident does not count.
* **speculative hit rate**: share of probes with an evicted needed page in which
  every such page was paged in speculatively before the model was called.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from copage.session.records import ProbeRecord

__all__ = ["Rate", "recall_precision", "right_page_rate", "speculative_hit_rate", "trigger_rate"]


@dataclass(frozen=True, slots=True)
class Rate:
    """A share ``hits / total``; ``value`` is NaN when ``total`` is 0."""

    hits: int
    total: int

    @property
    def value(self) -> float:
        return self.hits / self.total if self.total else math.nan

    def __float__(self) -> float:
        return self.value

    def __str__(self) -> str:
        return f"{self.value:.1%} ({self.hits}/{self.total})" if self.total else "n/a (0/0)"


def trigger_rate(records: Sequence[ProbeRecord]) -> Rate:
    """Share of probes needing an evicted page in which recall was called at least once."""
    pool = [r for r in records if r.needs_recall]
    return Rate(sum(r.triggered for r in pool), len(pool))


def recall_precision(records: Sequence[ProbeRecord]) -> Rate:
    """Share of recall calls (all probes) that named a page the probe needed."""
    hits = total = 0
    for r in records:
        needed = set(r.needed)
        for call in r.recalls:
            if not call.is_recall:
                continue
            total += 1
            hits += call.ok and call.page in needed
    return Rate(hits, total)


def right_page_rate(records: Sequence[ProbeRecord]) -> Rate:
    """Share of triggered probes (needed an evicted page, called recall) that got a needed page."""
    pool = [r for r in records if r.needs_recall and r.triggered]
    return Rate(sum(r.right_page for r in pool), len(pool))


def speculative_hit_rate(records: Sequence[ProbeRecord]) -> Rate:
    """Share of probes with an evicted needed page that speculative page-in fully served."""
    pool = [r for r in records if r.evicted]
    return Rate(sum(r.speculative_hit for r in pool), len(pool))
