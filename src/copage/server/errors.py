"""OpenAI-format errors (``{"error": {"message", "type", "code"}}``) and their statuses."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from copage.llm.errors import (
    AuthError,
    ModelError,
    ModelTimeout,
    RateLimited,
    RequestRejected,
    redact,
)
from copage.llm.retry import MAX_RETRY_AFTER


class ProxyError(Exception):
    """An error answered to the client with ``status`` and an OpenAI-format body."""

    def __init__(
        self, status: int, message: str, *, type: str = "invalid_request_error",
        code: str | None = None, param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.type, self.code, self.param = (
            status, message, type, code, param,
        )
        self.headers = headers or {}

    def body(self, clean: Callable[[str], str] = redact) -> dict[str, Any]:
        """The JSON body, with every known secret redacted (by ``clean``) from the message."""
        return {"error": {"message": clean(self.message), "type": self.type,
                          "code": self.code, "param": self.param}}


def bad_request(message: str, code: str = "invalid_request", param: str | None = None) -> ProxyError:
    """A 400 with an OpenAI-format body."""
    return ProxyError(400, message, code=code, param=param)


def from_model_error(exc: ModelError) -> ProxyError:
    """Map an upstream failure: timeout 504, 429, auth 401, rejected 400, else 502."""
    msg = f"upstream error: {exc}"
    if isinstance(exc, ModelTimeout):
        return ProxyError(504, msg, type="upstream_error", code="upstream_timeout")
    if isinstance(exc, RateLimited):
        wait = exc.retry_after or 0.0  # non-finite hints (a hostile upstream) are dropped
        headers = ({"retry-after": str(int(min(wait, MAX_RETRY_AFTER)))}
                   if math.isfinite(wait) and wait > 0 else {})
        return ProxyError(429, msg, type="rate_limit_error", code="rate_limit_exceeded",
                          headers=headers)
    if isinstance(exc, AuthError):
        return ProxyError(401, msg, type="authentication_error", code="upstream_auth_failed")
    if isinstance(exc, RequestRejected):
        return ProxyError(400, msg, code="upstream_rejected")
    return ProxyError(502, msg, type="upstream_error", code="upstream_error")
