"""What the commands on a store (``copage serve``, ``copage mcp``, ``copage conversations``)
check and prepare before they start: one copy, so that they start up alike and find
the same store."""

from __future__ import annotations

import os
from collections.abc import Mapping

from copage.core.config import PagerConfig


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
    """Create the directory of a SQLite store's file (the default one under
    ``~/.local/share`` may not exist yet); other stores have none."""
    from copage.stores import file_path

    path = file_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
