"""OpenAI-format errors (``{"error": {"message", "type", "code"}}``) and their statuses."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from copage.llm.errors import (
    AuthError,
    ContextOverflow,
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


#: A URL in an error's text (an operator reads it in the log; a client never does).
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"()<>,]+", re.IGNORECASE)


def client_text(exc: ModelError) -> str:
    """The failure as a client may read it: ``upstream`` where the SDK names its provider
    or an address (which upstream the proxy calls, and where, is the operator's to know)."""
    text = str(exc)
    if exc.provider and text.startswith(exc.provider + ":"):
        text = "upstream" + text[len(exc.provider):]
    return _URL.sub("the upstream", text)


def from_model_error(exc: ModelError) -> ProxyError:
    """Map an upstream failure: timeout 504, 429, auth 401, rejected 400, else 502."""
    msg = f"upstream error: {client_text(exc)}"
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
    if isinstance(exc, ContextOverflow):  # OpenAI's code, which clients know
        return ProxyError(400, msg, code="context_length_exceeded")
    if isinstance(exc, RequestRejected):
        return ProxyError(400, msg, code="upstream_rejected")
    return ProxyError(502, msg, type="upstream_error", code="upstream_error")
