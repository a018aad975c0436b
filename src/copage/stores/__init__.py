"""Page stores: memory, SQLite, PostgreSQL, chosen by URL with :func:`open_store`.

URLs:
    ``memory://``                          in-process, nothing persisted
    ``sqlite:///abs/path.db``, ``sqlite://rel.db`` or a plain path   one SQLite file
        (everything after ``sqlite://`` is the path; ``?synchronous=NORMAL`` is accepted)
    ``postgresql://user@host:port/db``      (``?schema=name`` puts the tables in that schema)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from copage.core.registry import Registry, UnknownNameError, check_options
from copage.stores.change_checks import InvalidChange
from copage.stores.codec import CorruptRow
from copage.stores.protocol import (
    ChangeSet,
    ConversationExists,
    ConversationInfo,
    ConversationNotFound,
    Event,
    PageRecord,
    PageStore,
    StoredConversation,
    StoreError,
    UnknownStoreOption,
    UnknownStoreSetting,
    VersionConflict,
)

STORES: Registry[PageStore] = Registry("store scheme")
"""URL scheme -> factory taking the rest of the URL as ``target=``."""


def _memory(target: str = "", **options: Any) -> PageStore:
    from copage.stores.inmemory import MemoryStore

    if target.strip("/") or options:
        raise StoreError("a memory store takes no path or options: use 'memory://'")
    return MemoryStore()


def _sqlite(target: str = "", **options: Any) -> PageStore:
    from copage.stores.sqlite import SQLiteStore

    path, _, query = target.partition("?")
    if not path:
        raise StoreError("sqlite store needs a path, e.g. 'sqlite:///var/lib/copage.db'")
    params: dict[str, Any] = dict(parse_qsl(query))
    check_options("the sqlite store URL", params, ["synchronous"], UnknownStoreOption)
    return SQLiteStore(path, **params, **options)


def _postgres(target: str = "", **options: Any) -> PageStore:
    try:
        from copage.stores.postgres import PostgresStore
    except ImportError as e:
        if (e.name or "").startswith("psycopg"):
            raise StoreError(
                "PostgreSQL stores need psycopg 3: pip install 'copage[postgres]'"
            ) from None
        raise
    parts = urlsplit(target)
    query = parse_qsl(parts.query)
    schema = next((v for k, v in query if k == "schema"), None)
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    dsn = urlunsplit(parts._replace(query=rest))
    return PostgresStore(dsn, schema=options.pop("schema", schema), **options)


STORES.register("memory", _memory)
STORES.register("sqlite", _sqlite)
STORES.register("postgresql", _postgres)
STORES.register("postgres", _postgres)


def default_store_url() -> str:
    """The store of ``copage serve``, ``copage mcp`` and ``copage conversations`` when
    none is given: SQLite under the user's data dir (``$XDG_DATA_HOME/copage/copage.db``)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return f"sqlite://{Path(base) / 'copage' / 'copage.db'}"


def file_path(url: str) -> Path | None:
    """The file a store URL names: a SQLite store's (``sqlite://`` or a plain path, the
    rule :func:`open_store` follows), None for stores without one."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme != "sqlite":
        return None
    path = (rest if sep else url).partition("?")[0]
    return Path(path) if path else None


def open_store(url: str, **options: Any) -> PageStore:
    """Open the store named by ``url`` (see module docstring); ``options`` go to its class.

    Raises:
        UnknownNameError: for an unknown scheme (the message lists the valid ones).
        StoreError: when the store cannot be opened.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return _sqlite(url, **options)
    if scheme in ("postgresql", "postgres"):
        return STORES.create(scheme, target=url, **options)
    return STORES.create(scheme, target=rest, **options)


__all__ = [
    "STORES",
    "ChangeSet",
    "ConversationExists",
    "ConversationInfo",
    "ConversationNotFound",
    "CorruptRow",
    "Event",
    "InvalidChange",
    "PageRecord",
    "PageStore",
    "StoreError",
    "StoredConversation",
    "UnknownNameError",
    "UnknownStoreOption",
    "UnknownStoreSetting",
    "VersionConflict",
    "default_store_url",
    "file_path",
    "open_store",
]
