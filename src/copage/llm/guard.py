"""The switch that forbids real network model calls (for unit tests).

Network adapters call :func:`check_url` before sending. When forbidden, any host
that is not loopback (``localhost``, ``127.0.0.0/8``, ``::1``) is refused, so tests
against local fake servers still run. Forbid with the env var
``COPAGE_FORBID_NETWORK_MODELS=1`` (``=all`` refuses loopback too) or the
:func:`forbid_network` context manager.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from copage.llm.errors import NetworkForbidden

ENV_VAR = "COPAGE_FORBID_NETWORK_MODELS"
_stack: list[bool] = []  # allow_loopback of each active forbid_network()


@contextmanager
def forbid_network(*, allow_loopback: bool = True) -> Iterator[None]:
    """Within the block, network model calls to non-loopback hosts raise ``NetworkForbidden``."""
    _stack.append(allow_loopback)
    try:
        yield
    finally:
        _stack.pop()


def _mode() -> str | None:
    """None (allowed), ``"remote"`` (non-loopback forbidden) or ``"all"``."""
    if _stack:
        return "remote" if all(_stack) else "all"
    value = os.environ.get(ENV_VAR, "").strip().lower()
    if value in ("", "0", "false", "no", "off"):
        return None
    return "all" if value == "all" else "remote"


def network_forbidden() -> bool:
    """True when non-loopback network model calls are forbidden now."""
    return _mode() is not None


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback IP addresses."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str, provider: str) -> None:
    """Raise ``NetworkForbidden`` if a call to ``url`` is forbidden now."""
    mode = _mode()
    if mode is None:
        return
    host = urlsplit(url).hostname or ""
    if mode == "remote" and is_loopback(host):
        return
    raise NetworkForbidden(
        provider,
        f"network model calls are forbidden here (host {host!r}; "
        f"{ENV_VAR} or forbid_network()); use ScriptedModel or a local fake server",
    )
