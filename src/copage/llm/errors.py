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


_WINDOW = (
    re.compile(r"available context size \((\d+) tokens\)"),  # llama.cpp's server
    re.compile(r"maximum context length is (\d+) tokens"),  # OpenAI, vLLM, LiteLLM
    re.compile(r"prompt is too long: \d+ tokens > (\d+) maximum"),  # Anthropic
    re.compile(r"context window (?:of|is) (\d+) tokens"),
)
_ASKED = (
    re.compile(r"request \((\d+) tokens\) exceeds"),  # llama.cpp's server
    re.compile(r"messages resulted in (\d+) tokens"),  # OpenAI
    re.compile(r"prompt is too long: (\d+) tokens"),  # Anthropic
    re.compile(r"(\d+) in the messages"),  # vLLM
)
_OVERFLOW = re.compile(r"context_length_exceeded|exceeds? the (?:available )?context|"
                       r"context (?:length|window) exceeded|prompt is too long", re.IGNORECASE)


class ContextOverflow(RequestRejected):
    """The request did not fit the model's context window (``window``: its size in the
    model's tokens, when the server said it). The message says how to page by a
    smaller budget (:func:`overflow_hint`)."""

    def __init__(self, provider: str, message: str, *, status: int | None = None,
                 window: int | None = None, asked: int | None = None) -> None:
        super().__init__(provider, message, status=status)
        self.window, self.asked = window, asked


def asked_tokens(message: str) -> int | None:
    """From an upstream's context-window error: the request's size in the model's tokens,
    when the text says it."""
    for pattern in _ASKED:
        m = pattern.search(message)
        if m:
            return int(m.group(1))
    return None


def context_window(message: str) -> int | bool:
    """From an upstream's error text: the model's context window in tokens when the text
    says the request did not fit it and names it, True when it says so without a size,
    else False."""
    for pattern in _WINDOW:
        m = pattern.search(message)
        if m:
            return int(m.group(1))
    return bool(_OVERFLOW.search(message))


def overflow_hint(window: int | None) -> str:
    """What to do about a request that did not fit a window of ``window`` tokens: page by
    a budget of about 40% of it (counted in o200k tokens, which a small model's
    tokenizer may count 1.3 times over; the rest holds the bookmarks, the open page, the
    fill and the answer)."""
    n = max(500, int(window * 0.4) // 100 * 100) if window is not None else 0
    size = f" ({window:,} tokens)" if window is not None else ""
    if not n or n >= 40_000:  # the default budget fits such a window: one part is too long
        budget = ("a smaller budget (budget_tokens=, `copage serve --budget-tokens`); a "
                  "single message longer than the window cannot be paged")
    else:
        budget = (f"a budget of about {n:,} tokens (budget_tokens={n}, or "
                  f"`copage serve --budget-tokens {n}`)")
    return (f"copage: the conversation did not fit the model's context window{size}; "
            f"page it by {budget}: docs/paging-budget.md")


def error_for_status(
    provider: str, status: int, message: str, retry_after: float | None = None
) -> ModelError:
    """The error class that fits an HTTP status (a 400 or 413 that says the request did not
    fit the model's window: :class:`ContextOverflow`, with what to do about it)."""
    if status == 429:
        return RateLimited(provider, message, status=status, retry_after=retry_after)
    if status in (401, 403):
        return AuthError(provider, message, status=status)
    if status == 408 or status >= 500:
        return UpstreamError(provider, message, status=status, retry_after=retry_after)
    if status in (400, 413):
        window = context_window(message)
        if window is not False:
            size = None if window is True else int(window)
            return ContextOverflow(provider, f"{message} ({overflow_hint(size)})",
                                   status=status, window=size, asked=asked_tokens(message))
    return RequestRejected(provider, message, status=status)


def overflow_of(error: BaseException) -> ContextOverflow | None:
    """``error`` as a :class:`ContextOverflow`: itself, or another library's error (an
    SDK's ``BadRequestError`` raised inside a framework) whose text says the request did
    not fit the model's window; None for any other error."""
    if isinstance(error, ContextOverflow):
        return error
    text = str(error)
    window = context_window(text)
    if window is False:
        return None
    return ContextOverflow("model", text, window=None if window is True else int(window),
                           asked=asked_tokens(text))


def note_overflow(exc: BaseException) -> None:
    """Add :func:`overflow_hint` to ``exc`` as a note when its text says the request did not
    fit the model's context window (an SDK's own error, e.g. LangChain's model's: its type
    is kept, the hint shows with it)."""
    found = overflow_of(exc)
    if found is not None and found is not exc:
        exc.add_note(overflow_hint(found.window))
