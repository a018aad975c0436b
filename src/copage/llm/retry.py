"""Retries with exponential backoff and full jitter.

Full jitter (sleep ~ U(0, min(cap, base * 2**attempt))) is from Marc Brooker,
"Exponential Backoff And Jitter", AWS Architecture Blog, 2015. A server's
``Retry-After`` hint, when present, replaces the drawn delay (capped).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from copage.llm.errors import ModelError

T = TypeVar("T")
log = logging.getLogger("copage.llm")

Sleep = Callable[[float], Awaitable[None]]
#: Largest ``Retry-After`` hint taken at face value (one day), in seconds.
MAX_RETRY_AFTER = 86400.0


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry.

    Attributes:
        max_retries: retries after the first attempt (0: no retries).
        base_delay: seconds; the backoff cap doubles from here each attempt.
        max_delay: upper bound of any single sleep, Retry-After included.
        sleep: the sleep function (inject a fake in tests).
        rng: random source for the jitter (seed it for reproducible delays).
    """

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0
    sleep: Sleep = asyncio.sleep
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("max_retries, base_delay and max_delay must be >= 0")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_delay)
        cap = min(self.max_delay, self.base_delay * (2**attempt))
        return self.rng.uniform(0.0, cap)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date), if any.

    Values that are not finite numbers (``inf``, ``nan``, ``1e400``) are ignored and
    the rest clamped to ``0..MAX_RETRY_AFTER``: the hint comes from the network.
    """
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    ms = _finite(lower.get("retry-after-ms"))
    if ms is not None:
        return _clamp(ms / 1000.0)
    value = lower.get("retry-after")
    if value is None:
        return None
    seconds = _finite(value)
    if seconds is not None:
        return _clamp(seconds)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return _clamp(when.timestamp() - time.time())


def _finite(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _clamp(seconds: float) -> float:
    return min(max(0.0, seconds), MAX_RETRY_AFTER)


async def call_with_retries(fn: Callable[[], Awaitable[T]], policy: RetryPolicy) -> T:
    """Await ``fn()``, retrying retryable :class:`ModelError` s per ``policy``."""
    attempt = 0
    while True:
        try:
            return await fn()
        except ModelError as e:
            if not e.retryable or attempt >= policy.max_retries:
                raise
            wait = policy.delay(attempt, e.retry_after)
            log.warning("%s; retry %d/%d in %.2fs", e, attempt + 1, policy.max_retries, wait)
            await policy.sleep(wait)
            attempt += 1
