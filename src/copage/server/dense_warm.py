"""The proxy's meaning channel without a long wait: a request embeds its conversation's
closed turns for at most :data:`WAIT_SECONDS`, then goes on; the embedding finishes in
its thread, and until it has, the fill sits the channel out (BM25 only) and later
requests of the conversation do not wait for it at all, so a client that sends a long
history at once is kept waiting once, for at most that long (docs/dense.md)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from copage.core.dense_rank import DenseRanker
from copage.core.passages import PassageIndex

__all__ = ["WAIT_SECONDS", "proxy_ranker", "wait_seconds", "warm"]

WAIT_SECONDS = 10.0
"""How long a request waits for its conversation's turns to be embedded, unless
``COPAGE_DENSE_WAIT`` (seconds) says otherwise."""


def wait_seconds(env: Mapping[str, str] | None = None) -> float:
    """``COPAGE_DENSE_WAIT`` when set (seconds, >= 0), else :data:`WAIT_SECONDS`.

    Raises:
        ValueError: not a number of seconds >= 0.
    """
    raw = (os.environ if env is None else env).get("COPAGE_DENSE_WAIT", "").strip()
    if not raw:
        return WAIT_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"COPAGE_DENSE_WAIT must be a number of seconds >= 0, got {raw!r}")
    return value


def proxy_ranker(ranker: DenseRanker | None) -> DenseRanker | None:
    """``ranker``'s encoder and slots in a ranker that never waits in the fill
    (``wait=False``): :func:`warm` does the waiting, bounded."""
    if ranker is None or not ranker.wait:
        return ranker
    return DenseRanker(ranker.encoder, ranker.slots, wait=False)


async def warm(run: Callable[..., Awaitable[Any]], ranker: DenseRanker,
               passages: PassageIndex, seconds: float | None = None) -> bool:
    """Embed ``passages``' turns with ``run`` (the store's thread pool), waiting at most
    ``seconds`` (default :func:`wait_seconds`), and not at all while an earlier
    request's embedding is still running; whether they are all embedded now."""
    if ranker.busy:  # another request's embedding: no waiting behind it
        return False
    job = asyncio.ensure_future(run(_sync, ranker, passages))
    try:
        await asyncio.wait_for(asyncio.shield(job), wait_seconds() if seconds is None else seconds)
    except TimeoutError:
        return False  # goes on in its thread; the next request finds the vectors
    return True


def _sync(ranker: DenseRanker, passages: PassageIndex) -> None:
    ranker.sync(passages, wait=True)
