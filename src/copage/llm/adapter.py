"""Shared machinery of the network adapters: keys, clients, errors, retries, guard."""

from __future__ import annotations

import asyncio
import os
import random
import weakref
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any, TypeVar

from copage.llm.errors import (
    AuthError,
    BadResponse,
    ModelError,
    ModelTimeout,
    UpstreamError,
    error_for_status,
    fd_exhaustion,
    out_of_fds,
    redact,
    safe_url,
)
from copage.llm.guard import check_url, is_loopback
from copage.llm.retry import RetryPolicy, Sleep, call_with_retries, parse_retry_after
from copage.llm.runner import on_loop_close

T = TypeVar("T")
DUMMY_KEY = "sk-no-key-required"


def resolve_key(
    provider: str, api_key: str | None, env: str, base_url: str, default_url: str
) -> str:
    """The API key: explicit, else ``$env``, else a dummy key for a custom/local server.

    A dummy key is only used when ``base_url`` is loopback (local servers ignore
    keys); anywhere else a missing key is an ``AuthError`` raised at construction.
    """
    key = api_key or os.environ.get(env)
    if key:
        return key
    from urllib.parse import urlsplit

    if base_url != default_url and is_loopback(urlsplit(base_url).hostname or ""):
        return DUMMY_KEY
    raise AuthError(provider, f"no API key: set {env} or pass api_key=...")


class Secret:
    """Holds a key; its repr and str never show it."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__


def sdk_payload(obj: Any) -> Any:
    """The JSON data of an SDK object (the SDK hands non-JSON bodies through as ``str``)."""
    dump = getattr(obj, "model_dump", None)
    if dump is None:
        return obj
    return dump(warnings=False)


class NetworkModel:
    """Base of the SDK adapters: one SDK client per event loop, retries, error mapping.

    Synchronous callers all run on one shared loop (:mod:`copage.llm.runner`), so
    in practice a model has one client. :meth:`aclose` / :meth:`close` close it.
    """

    provider: str

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        base_url: str,
        spec: str,
        api_key: str,
        timeout: float = 60.0,
        max_retries: int = 4,
        base_delay: float = 0.5,
        max_delay: float = 30.0,
        sleep: Sleep | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not model:
            raise ValueError(f"{provider}: empty model name in spec {spec!r}")
        if timeout <= 0:
            raise ValueError(f"{provider}: timeout must be > 0, got {timeout}")
        self.provider, self.model, self.base_url, self._spec = provider, model, base_url, spec
        self.__key = Secret(api_key)
        self.timeout = timeout
        self.retry = RetryPolicy(
            max_retries=max_retries,
            base_delay=base_delay,
            max_delay=max_delay,
            sleep=sleep or asyncio.sleep,
            rng=rng or random.Random(),
        )
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def name(self) -> str:
        return self.model

    @property
    def spec(self) -> str:
        return self._spec

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._spec!r})"

    def _api_key(self) -> str:
        return self.__key.value

    def _make_client(self) -> Any:
        raise NotImplementedError

    def _sdk(self) -> ModuleType:
        raise NotImplementedError

    def _failures(self) -> tuple[type[Exception], ...]:
        """Exceptions of a call that become a :class:`ModelError`."""
        return (self._sdk().APIError, ValueError, TypeError, KeyError)

    def _client(self) -> Any:
        """The SDK client of the running loop (SDK clients are bound to one loop)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = self._make_client()
            on_loop_close(loop, self.aclose)
        return client

    async def aclose(self) -> None:
        """Close the client of the running loop (a later call opens a new one)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    def close(self) -> None:
        """Close every client of this model whose loop still runs (from synchronous code)."""
        for loop, client in list(self._clients.items()):
            self._clients.pop(loop, None)
            if loop.is_closed():
                continue
            if loop.is_running():
                try:
                    running = asyncio.get_running_loop()
                except RuntimeError:
                    running = None
                if running is loop:
                    loop.create_task(client.close())
                else:
                    asyncio.run_coroutine_threadsafe(client.close(), loop).result(timeout=10)
            else:
                loop.run_until_complete(client.close())

    def _error(self, exc: Exception) -> ModelError:
        """Map an SDK exception to a :class:`ModelError` (key redacted)."""
        sdk, p = self._sdk(), self.provider
        if isinstance(exc, ModelError):
            return exc
        fds = fd_exhaustion(exc)
        if fds is not None:
            return out_of_fds(p, fds)
        if isinstance(exc, sdk.APITimeoutError):
            return ModelTimeout(p, f"timed out after {self.timeout}s")
        if isinstance(exc, sdk.APIConnectionError):
            cause = type(exc.__cause__).__name__ if exc.__cause__ else "unknown"
            return UpstreamError(p, f"connection to {safe_url(self.base_url)} failed ({cause})")
        if isinstance(exc, sdk.APIStatusError):
            body = getattr(exc, "body", None)
            msg = str(getattr(exc, "message", "") or exc)
            if isinstance(body, dict):
                inner = body.get("error", body)
                if isinstance(inner, dict) and inner.get("message"):
                    msg = str(inner["message"])
            headers = dict(exc.response.headers.items())
            return error_for_status(
                p, exc.status_code, redact(msg, self.__key.value)[:300], parse_retry_after(headers)
            )
        return BadResponse(p, redact(f"{type(exc).__name__}: {exc}", self.__key.value)[:300])

    async def _send(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Guard check, then ``fn()`` with SDK errors mapped and retries applied."""
        check_url(self.base_url, self.provider)

        async def attempt() -> T:
            try:
                return await fn()
            except ModelError:
                raise
            except self._failures() as e:  # mapped; `from None` keeps SDK text out
                raise self._error(e) from None
            except OSError as e:
                fds = fd_exhaustion(e)
                if fds is None:
                    raise
                raise out_of_fds(self.provider, fds) from None

        return await call_with_retries(attempt, self.retry)
