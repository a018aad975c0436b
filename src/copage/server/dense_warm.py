"""The proxy's meaning channel without a long wait: a request embeds its conversation's
closed turns for at most :data:`WAIT_SECONDS`, then goes on; the embedding finishes in
its own (daemon) thread, and until it has, the fill sits the channel out (BM25 only)
and later requests do not wait for it at all, so a client that sends a long history at
once is kept waiting once, for at most that long, and a proxy shutting down does not
wait for it either (docs/dense.md). The library's default channel bounds its wait the
same way, in :meth:`DenseRanker.sync` itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from copage.core.dense_rank import DenseRanker
from copage.core.passages import PassageIndex
from copage.dense.default_channel import WAIT_SECONDS, wait_seconds

__all__ = ["WAIT_SECONDS", "proxy_ranker", "wait_seconds", "warm"]


def proxy_ranker(ranker: DenseRanker | None) -> DenseRanker | None:
    """``ranker``'s encoder and slots in a ranker that never waits in the fill
    (``wait=False``): :func:`warm` does the waiting, bounded."""
    if ranker is None or ranker.wait is False:
        return ranker
    return DenseRanker(ranker.encoder, ranker.slots, wait=False)


async def warm(run: Callable[..., Awaitable[Any]], ranker: DenseRanker,
               passages: PassageIndex, seconds: float | None = None) -> bool:
    """Embed ``passages``' turns with ``run`` (the store's thread pool), waiting at most
    ``seconds`` (default :func:`wait_seconds`), and not at all while an earlier
    request's embedding is still running; whether they are all embedded now."""
    if ranker.busy:  # another request's embedding: no waiting behind it
        return False
    done: bool = await run(_sync, ranker, passages, wait_seconds() if seconds is None else seconds)
    return done  # if not, it goes on in its thread; a later request finds the vectors


def _sync(ranker: DenseRanker, passages: PassageIndex, seconds: float) -> bool:
    return ranker.sync(passages, wait=seconds) is not None
