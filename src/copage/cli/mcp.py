"""``copage mcp``: paged conversation memory as an MCP server (see ``docs/mcp.md``)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from copage.cli.paging_args import add_paging_options, paging_settings

DEFAULT_PORT = 8788


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "mcp", help="MCP server: paged memory of conversations for MCP clients",
        description="Serve copage's paged conversation memory over the Model Context "
        "Protocol: tools append_turns, list_bookmarks, recall_page, search_pages, "
        "list_conversations, delete_conversation and the resource "
        "copage://conversations/{id}/bookmarks. "
        "Needs the mcp extra: pip install 'copage[mcp]'.",
    )
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                   help="stdio (default; for desktop clients) or streamable HTTP")
    p.add_argument("--store", help="sqlite:///path (default ~/.local/share/copage/copage.db, "
                   "or COPAGE_STORE), postgresql://..., memory://")
    p.add_argument("--tenant", default="default",
                   help="tenant of stdio calls and of HTTP calls when no keys are set")
    h = p.add_argument_group("streamable HTTP")
    h.add_argument("--host", default="127.0.0.1")
    h.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}")
    h.add_argument("--path", default="/mcp", help="endpoint path (default /mcp)")
    h.add_argument("--keys-file", dest="keys_file", help='JSON/TOML {"key": "tenant"}; '
                   "or COPAGE_KEYS=key1=tenantA,key2=tenantB")
    h.add_argument("--stateless", action="store_true", help="no MCP sessions (each request "
                   "stands alone; for several workers behind a load balancer)")
    add_paging_options(p)
    p.add_argument("--log-level", default="warning",
                   choices=["debug", "info", "warning", "error"])


def _keys(args: argparse.Namespace) -> dict[str, str]:
    from copage.server.settings import load_keys_file, parse_keys

    keys: dict[str, str] = {}
    if args.keys_file:
        keys.update(load_keys_file(args.keys_file))
    if os.environ.get("COPAGE_KEYS"):
        keys.update(parse_keys(os.environ["COPAGE_KEYS"]))
    for key, tenant in keys.items():
        if len(key) < 8 or not tenant:
            raise ValueError("API keys must be at least 8 characters and name a tenant")
    return keys


def run(args: argparse.Namespace) -> int:
    from copage.adapters.mcp import ConversationPool, create_server, serve_http  # copage[mcp]
    from copage.cli.serve import safe_url
    from copage.cli.startup import (
        check_paging,
        check_store,
        refuse_open_without_keys,
        store_url,
    )
    from copage.core.config import PagerConfig
    from copage.session.auth import KeyRing

    paging = paging_settings(args)
    config = PagerConfig(**paging)
    check_paging(config)
    store = store_url(args.store)
    check_store(store)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    keys = _keys(args) if args.transport == "http" else {}
    if args.transport == "http":
        refuse_open_without_keys(keys, args.host, "API keys")
    pool = ConversationPool(store, config)
    server = create_server(pool, tenant=args.tenant)
    # stdout carries the protocol on stdio: everything else goes to stderr.
    if args.transport == "stdio":
        print(f"copage mcp: stdio; store {safe_url(store)}; tenant {args.tenant!r}",
              file=sys.stderr)
        try:
            server.run("stdio")
        finally:
            pool.close()
        return 0
    who = f"{len(keys)} API key(s)" if keys else f"no API keys: one tenant {args.tenant!r}"
    print(f"copage mcp: http://{args.host}:{args.port}{args.path}; store {safe_url(store)}; "
          f"{who}", file=sys.stderr)
    try:
        serve_http(server, KeyRing(keys), host=args.host, port=args.port, path=args.path,
                   tenant=args.tenant, stateless_http=args.stateless,
                   log_level=args.log_level)
    finally:
        pool.close()
    return 0
