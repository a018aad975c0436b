"""Retries with exponential backoff and full jitter.

Full jitter (sleep ~ U(0, min(cap, base * 2**attempt))) is from Marc Brooker,
"Exponential Backoff And Jitter", AWS Architecture Blog, 2015. A server's
``Retry-After`` hint, when present, replaces the drawn delay (capped).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from copage.llm.errors import ModelError

T = TypeVar("T")
log = logging.getLogger("copage.llm")

Sleep = Callable[[float], Awaitable[None]]


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
    """Seconds from ``retry-after-ms`` / ``Retry-After`` (seconds or HTTP date), if any."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


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
