"""Errors raised by model adapters.

Messages name the provider and the HTTP status, never the API key: every
message passes through :func:`redact` before it is raised.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

_KEYLIKE = re.compile(r"\b(sk|pk|key|sess)-[A-Za-z0-9_\-*]{6,}|\bsk-ant-[A-Za-z0-9_\-*]+")


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with the given secrets and anything key-shaped replaced by ``***``."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return _KEYLIKE.sub("***", text)


def safe_url(url: str) -> str:
    """``url`` without credentials (``user:pass@``), query or fragment, for messages."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        netloc = host + (f":{parts.port}" if parts.port is not None else "")
    except ValueError:
        return "<unparseable url>"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def url_secrets(url: str | None) -> list[str]:
    """The credential parts of ``url`` (userinfo, password, query), to redact from logs."""
    if not url:
        return []
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return []
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    return [s for s in (userinfo, password, parts.query) if s]


class ModelError(RuntimeError):
    """A model call failed; ``provider`` and ``status`` say where and how."""

    retryable = False

    def __init__(
        self,
        provider: str,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.provider, self.status, self.retry_after = provider, status, retry_after
        where = f"{provider}: HTTP {status}" if status is not None else provider
        super().__init__(f"{where}: {message}")


class RateLimited(ModelError):
    """HTTP 429 (retried; ``retry_after`` holds the server's hint in seconds)."""

    retryable = True


class UpstreamError(ModelError):
    """HTTP 5xx or a connection failure (retried)."""

    retryable = True


class ModelTimeout(ModelError):
    """The request timed out (retried)."""

    retryable = True


class AuthError(ModelError):
    """HTTP 401/403 or a missing key (never retried)."""


class RequestRejected(ModelError):
    """Another 4xx: the request itself is wrong (never retried)."""


class BadResponse(ModelError):
    """An empty or malformed reply."""


class EmptyReply(BadResponse):
    """A reply with no text and no tool call (the chat loop asks once more).

    ``response``: the empty reply itself (a ``ChatResponse`` with its usage and cost),
    so that whoever counts the calls still bills it: the provider did.
    """

    def __init__(self, provider: str, message: str, response: Any = None) -> None:
        super().__init__(provider, message)
        self.response = response


class OutOfFileDescriptors(ModelError):
    """The process ran out of file descriptors (EMFILE/ENFILE) before it could connect.

    Not an upstream failure and never retried: something in the process holds
    too many sockets or files open (or ``ulimit -n`` is too low).
    """


class NetworkForbidden(ModelError):
    """A network model call was attempted while network model calls are forbidden."""


class MissingExtraError(ImportError):
    """A provider's vendor SDK is not installed."""


def fd_exhaustion(exc: BaseException) -> OSError | None:
    """The EMFILE/ENFILE ``OSError`` somewhere in ``exc``'s cause chain, if any."""
    import errno

    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, OSError) and cur.errno in (errno.EMFILE, errno.ENFILE):
            return cur
        cur = cur.__cause__ or cur.__context__
    return None


def out_of_fds(provider: str, err: OSError) -> OutOfFileDescriptors:
    """The error for a call that failed because the process ran out of file descriptors."""
    try:
        import resource

        limit = f" (ulimit -n is {resource.getrlimit(resource.RLIMIT_NOFILE)[0]})"
    except (ImportError, OSError, ValueError):
        limit = ""
    return OutOfFileDescriptors(
        provider, f"too many open files{limit}: {err.strerror or err}; the process holds "
        "too many sockets or files open",
    )


def error_for_status(
    provider: str, status: int, message: str, retry_after: float | None = None
) -> ModelError:
    """The error class that fits an HTTP status."""
    if status == 429:
        return RateLimited(provider, message, status=status, retry_after=retry_after)
    if status in (401, 403):
        return AuthError(provider, message, status=status)
    if status == 408 or status >= 500:
        return UpstreamError(provider, message, status=status, retry_after=retry_after)
    return RequestRejected(provider, message, status=status)
