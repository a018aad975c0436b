"""What both server commands (``copage serve``, ``copage mcp``) check and prepare before
they listen: one copy, so that the proxy and the MCP server start up alike."""

from __future__ import annotations

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


def make_store_dir(url: str) -> None:
    """Create the directory of a SQLite store's file (the default one under
    ``~/.local/share`` may not exist yet); other stores have none."""
    from copage.stores import file_path

    path = file_path(url)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
