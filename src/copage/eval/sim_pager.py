"""Pagers set up for the offline evaluation, built from a plain :class:`~copage.core.pager.Pager`.

The runtime pager takes only its settings. What only the evaluation needs is added here:

* :func:`with_future`: a config whose policy is built with the whole future access
  sequence (``belady``, and ``belady_scheduled`` from :mod:`copage.eval.oracle`), bound
  in a run-local policy registry (``PagerConfig(policies=...)``); the global
  ``POLICIES`` is not changed.
* :func:`simulation_pager`: a pager that replays page cuts computed once by
  :func:`~copage.core.paginate.paginate` (the simulation cuts a conversation once and
  replays it in every cell) and, for placement ``end``, makes bookmarks only in
  :meth:`~copage.core.pager.Pager.refresh_all_bookmarks`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from copage.core.config import PagerConfig
from copage.core.pager import Pager
from copage.core.paginate import ReplayPaginator, Span
from copage.core.policies import EvictionPolicy
from copage.core.types import PageId

__all__ = ["simulation_pager", "with_future"]


def with_future(config: PagerConfig, future: Sequence[PageId]) -> PagerConfig:
    """``config`` whose policy is built with ``future`` (the whole access sequence, every
    admit and access in order), which wins over a ``policy_options`` entry of that name.

    The policy is looked up in a new registry: ``config``'s (or the global one) with
    ``config.policy`` bound to the future; nothing else sees it.
    """
    base, name, seq = config.policy_registry(), config.policy, list(future)

    def make(**options: object) -> EvictionPolicy:
        return base.create(name, **{**options, "future": seq})

    return replace(config, policies=base.extended({name: make}))


def simulation_pager(config: PagerConfig, *, spans: Sequence[Span] | None = None,
                     defer_bookmarks: bool = False) -> Pager:
    """A new :class:`Pager` for ``config`` set up for the simulation.

    Args:
        spans: page cuts computed before by :func:`~copage.core.paginate.paginate` for
            this conversation (with ``config``'s boundary): replayed instead of cutting
            again (:class:`~copage.core.paginate.ReplayPaginator`).
        defer_bookmarks: make bookmarks only in
            :meth:`~copage.core.pager.Pager.refresh_all_bookmarks` (placement ``end``:
            probes at the end; the grouped index is then folded there too).
    """
    pager = Pager(config)
    # Both are set while the pager is still empty (no turn yet), as the hooks require.
    if spans is not None:
        pager.paginator = ReplayPaginator(pager.boundary, spans)
    pager.defer_bookmarks = defer_bookmarks
    return pager
