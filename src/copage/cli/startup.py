"""What the commands on a store (``copage serve``, ``copage mcp``, ``copage conversations``)
check and prepare before they start: one copy, so that they start up alike and find
the same store."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from copage.core.config import PagerConfig

if TYPE_CHECKING:
    from copage.stores.protocol import PageStore


def check_paging(config: PagerConfig) -> None:
    """Build a pager once, so that an unknown policy, boundary or extractor name fails
    here with the valid ones listed, not on the first request."""
    from copage.core.pager import Pager

    Pager(config)


def refuse_open_without_keys(keys: Mapping[str, str], host: str, what: str) -> None:
    """A server without keys (one tenant, no authentication) listens on loopback only."""
    from copage.llm.guard import is_loopback

    if not keys and not is_loopback(host):
        raise ValueError(f"no {what} configured: refusing to listen on {host}; "
                         "set COPAGE_KEYS / --keys-file, or listen on 127.0.0.1")


def store_url(flag: str | None) -> str:
    """The store a command uses: ``--store``, else ``$COPAGE_STORE``, else the default
    SQLite file (``copage serve`` reads the same through its settings)."""
    from copage.stores import default_store_url

    return flag or os.environ.get("COPAGE_STORE") or default_store_url()


def make_store_dir(url: str) -> None:
    """The one rule for a SQLite store's directory: the default store's (under
    ``~/.local/share``, which may not exist yet) is created; a path the user gave
    (``--store``, ``$COPAGE_STORE``, a config file) whose directory does not exist is an
    error naming the fix (a typo must not create directories). Other stores have none."""
    from copage.stores import default_store_url, file_path

    path = file_path(url)
    if path is None:
        return
    if url == default_store_url():
        path.parent.mkdir(parents=True, exist_ok=True)
    elif not path.parent.is_dir():
        raise ValueError(f"store {path}: directory {path.parent} does not exist; create it "
                         "first, or give a path in an existing directory")


def open_checked(url: str) -> PageStore:
    """The command's store, opened (its directory per :func:`make_store_dir`); a store
    that cannot be opened (no such server, a read-only directory, not a database, an
    unknown scheme) is a one-line ``ValueError`` saying what is wrong."""
    from copage.stores import open_store
    from copage.stores.protocol import StoreError

    make_store_dir(url)
    try:
        return open_store(url)
    except StoreError as e:  # a driver's message may hold several lines (libpq's hint)
        text = "; ".join(line.strip() for line in str(e).splitlines() if line.strip())
        raise ValueError(f"store: {text}") from None


def check_store(url: str) -> None:
    """Open and close the store once before a server starts: its failure is then one
    line and a non-zero exit, not a traceback from inside the server's startup."""
    open_checked(url).close()


def check_model(spec: str | None, api_key: str | None) -> None:
    """Build a ``--model`` spec's model once, so that a missing key or an unknown
    provider is one line and a non-zero exit (the server builds it again)."""
    if not spec:
        return
    from copage.llm import get_model
    from copage.llm.errors import ModelError

    try:
        if api_key:
            get_model(spec, api_key=api_key)
        else:
            get_model(spec)
    except ModelError as e:
        raise ValueError(f"--model {spec}: {e}") from None
