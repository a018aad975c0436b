"""Reading a pager snapshot stored by an older copage: named migrations to the current form.

A pager's snapshot (:func:`copage.core.snapshot.snapshot`) has had three older forms,
all still read:

* counters as a list ``[faults, hits, recalls, recall_errors, evictions]`` (whose
  faults included recall and speculative page-ins, which cannot be told apart
  afterwards), once under the key ``stats``: :func:`migrate_counters_list`;
* no ``page_rows`` marker: every page's access history inside ``cache`` and the
  bookmark epochs in ``epochs``, before per-page states were stored apart
  (:func:`migrate_page_rows`); such a pager writes every page's state, once, with
  its next change;
* no ``pins``, ``groups``, ``refresh_owed``, ``prompt_meter`` or ``event_seq``: read
  as their empty values by the restore itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

COUNTER_LIST = ("faults", "hits", "recalls", "recall_errors", "evictions")
"""The counters of the oldest list form, in its order."""


def migrate_counters_list(data: list[Any]) -> dict[str, int]:
    """The counters' list form as the current mapping (missing places count 0)."""
    return dict(zip(COUNTER_LIST, (int(x) for x in (list(data) + [0] * 5)[:5]), strict=True))


def stored_counters(state: Mapping[str, Any]) -> object:
    """The stored counters: ``counters``, or the older key ``stats``."""
    return state.get("counters", state.get("stats"))


@dataclass(frozen=True, slots=True)
class PageRows:
    """The per-page states of a stored pager, in the current form.

    ``epochs``: each page's bookmark epoch; ``rows``: the stored per-page states
    (empty for the older form, whose access histories are inside the cache's
    snapshot); ``before_page_rows``: stored in that older form (its pager then
    writes every page's state once, with its next change)."""

    epochs: dict[int, int]
    rows: dict[int, Mapping[str, Any]]
    before_page_rows: bool


def migrate_page_rows(state: Mapping[str, Any],
                      page_state: Mapping[int, Mapping[str, Any]] | None) -> PageRows:
    """The per-page states of ``state`` and ``page_state`` (the stored rows), reading
    a snapshot stored before they were kept apart (no ``page_rows``)."""
    rows = dict(page_state or {})
    if "page_rows" not in state:
        epochs = {int(i): int(e) for i, e in state.get("epochs", {}).items()}
        return PageRows(epochs, rows, True)
    return PageRows({i: int(r["epoch"]) for i, r in rows.items()}, rows, False)
