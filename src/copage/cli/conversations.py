"""``copage conversations``: list or delete the stored conversations of a tenant."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("conversations", help="list or delete stored conversations",
                       description="List or delete the conversations a store holds for one "
                       "tenant (the store copage serve / copage mcp use). A running proxy "
                       "checks the store before using a cached conversation, so a deleted "
                       "one is not served again.")
    p.add_argument("action", choices=["list", "delete"])
    p.add_argument("ids", nargs="*", metavar="ID", help="conversation ids to delete")
    p.add_argument("--store", help="store URL (default: $COPAGE_STORE, else copage serve's "
                   "default SQLite file)")
    p.add_argument("--tenant", default="default",
                   help="the tenant whose conversations these are (default: 'default')")


def run(args: argparse.Namespace) -> int:
    from copage.cli.startup import open_checked, store_url
    from copage.session.conversations import Conversations
    from copage.stores.base import ConversationNotFound

    url = store_url(args.store)
    store: Any = open_checked(url)
    try:
        if args.action == "list":
            if args.ids:
                raise ValueError("list takes no ids")
            for c in sorted(store.list_conversations(tenant=args.tenant),
                            key=lambda c: -c.updated_at):
                print(f"{c.id}\t{c.turns} turns\t{c.pages} pages")
            return 0
        if not args.ids:
            raise ValueError("delete needs at least one conversation id")
        missing = 0
        for cid in args.ids:
            try:
                Conversations(store, 0).delete(args.tenant, cid)
            except ConversationNotFound:
                print(f"copage conversations: no conversation {cid!r} for tenant "
                      f"{args.tenant!r}", file=sys.stderr)
                missing += 1
            else:
                print(f"deleted {cid}")
        return 1 if missing else 0
    finally:
        store.close()
