"""``copage conversations``: list, delete, export or import the stored conversations of a
tenant (export and import: one conversation as JSON Lines, see :mod:`copage.stores.transfer`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("conversations", help="list, delete, export or import stored "
                       "conversations",
                       description="List, delete, export (JSON Lines) or import the "
                       "conversations a store holds for one "
                       "tenant (the store copage serve / copage mcp use). A running proxy "
                       "checks the store before using a cached conversation, so a deleted "
                       "one is not served again.")
    p.add_argument("action", choices=["list", "delete", "export", "import"])
    p.add_argument("ids", nargs="*", metavar="ID",
                   help="conversation ids to delete; the one to export; the file to import "
                   "('-': standard input)")
    p.add_argument("--store", help="store URL (default: $COPAGE_STORE, else copage serve's "
                   "default SQLite file)")
    p.add_argument("--tenant", default="default",
                   help="the tenant whose conversations these are (default: 'default')")
    p.add_argument("-o", "--output", help="export: the file to write (default: standard "
                   "output)")
    p.add_argument("--as", dest="as_id", metavar="ID",
                   help="import: store it under this id instead of the file's")
    p.add_argument("--replace", action="store_true",
                   help="import: replace a conversation of the same id (default: refuse)")


def run(args: argparse.Namespace) -> int:
    from copage.cli.startup import open_checked, store_url
    from copage.session.opening import Conversations
    from copage.stores.protocol import ConversationNotFound

    url = store_url(args.store)
    store: Any = open_checked(url)
    try:
        if args.action in ("export", "import"):
            return _transfer(args, store)
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


def _transfer(args: argparse.Namespace, store: Any) -> int:
    """``export ID [-o FILE]`` / ``import FILE [--as ID] [--replace]``."""
    from copage.stores.protocol import ConversationExists, ConversationNotFound

    try:
        return _transfer_one(args, store)
    except ConversationNotFound:
        print(f"copage conversations: no conversation {args.ids[0]!r} for tenant "
              f"{args.tenant!r}", file=sys.stderr)
    except ConversationExists as e:
        print(f"copage conversations: {e}: nothing imported (--replace replaces it, "
              "--as ID imports it under another id)", file=sys.stderr)
    return 1


def _transfer_one(args: argparse.Namespace, store: Any) -> int:
    from copage.stores.transfer import export_conversation, import_conversation

    if len(args.ids) != 1:
        what = "conversation id" if args.action == "export" else "file"
        raise ValueError(f"{args.action} takes one {what}, got {len(args.ids)}")
    arg = args.ids[0]
    if args.action == "export":
        if args.output:
            tmp = Path(args.output + ".part")
            try:  # a file cut short by a failure is never left under the asked name
                with tmp.open("w", encoding="utf-8") as out:
                    lines = export_conversation(store, arg, out, tenant=args.tenant)
                tmp.replace(args.output)
            finally:
                tmp.unlink(missing_ok=True)
            print(f"exported {arg}: {lines} lines to {args.output}", file=sys.stderr)
        else:
            export_conversation(store, arg, sys.stdout, tenant=args.tenant)
        return 0
    if arg == "-":
        cid = import_conversation(store, sys.stdin, source="<stdin>", conversation_id=args.as_id,
                                  tenant=args.tenant, replace=args.replace)
    else:
        try:
            src = open(arg, encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as e:
            raise ValueError(f"cannot read {arg}: {e.strerror}") from None
        with src:
            cid = import_conversation(store, src, source=arg, conversation_id=args.as_id,
                                      tenant=args.tenant, replace=args.replace)
    _reindex(store, args.tenant, cid)
    print(f"imported {cid} (tenant {args.tenant!r})")
    return 0


def _reindex(store: Any, tenant: str, cid: str) -> None:
    """Let ``copage serve`` recognise the imported conversation from the messages a
    client resends (transparent mode): its transcript head goes into the proxy's index,
    as the proxy puts it after each turn. Without the server extra there is no proxy."""
    try:
        from copage.server.plan import last_rq
        from copage.server.transcript import index_for
    except ImportError:
        return
    from copage.memory import PagedMemory

    mem = PagedMemory(store=store, conversation_id=cid, tenant=tenant, create=False)
    last, rq = mem.last_turn, last_rq(mem)
    head = last.meta.get("h") if last is not None else None
    if isinstance(head, str):
        index = index_for(store)
        try:
            index.put(tenant, cid, head, str((rq or {}).get("prev") or ""))
        finally:
            index.close()
