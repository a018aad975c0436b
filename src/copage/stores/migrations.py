"""Ordered, named schema migrations shared by the SQLite and PostgreSQL stores.

After simonw/llm's ``migrations.py``: each migration is a function, applied once
in list order when a store opens, and recorded by name in ``_migrations(name,
applied_at)``. Both backends run the same functions (and so record the same
names); a :class:`Dialect` translates column types. A database holding a name
this list does not know was written by a newer copage and is refused.

JSON is stored as TEXT on both backends (not JSONB) so that both return the
exact text written and the codec reports a corrupt row the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from copage.stores.protocol import StoreError


@dataclass(frozen=True, slots=True)
class Dialect:
    """Column types of one SQL backend."""

    name: str
    int: str
    real: str
    text: str = "TEXT"


SQLITE = Dialect("sqlite", int="INTEGER", real="REAL")
POSTGRES = Dialect("postgres", int="BIGINT", real="DOUBLE PRECISION")

Execute = Callable[[str], object]
Migration = Callable[[Execute, Dialect], None]

CREATE_MIGRATIONS_TABLE = (
    "CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at {real} NOT NULL)"
)


def m001_initial(run: Execute, d: Dialect) -> None:
    """Conversations, turns, pages, bookmarks and events, keyed by tenant + conversation."""
    key = f"tenant {d.text} NOT NULL, conversation_id {d.text} NOT NULL"
    run(
        f"CREATE TABLE conversations (tenant {d.text} NOT NULL, id {d.text} NOT NULL, "
        f"config {d.text} NOT NULL, state {d.text} NOT NULL, version {d.int} NOT NULL, "
        f"n_turns {d.int} NOT NULL, n_pages {d.int} NOT NULL, "
        f"created_at {d.real} NOT NULL, updated_at {d.real} NOT NULL, "
        "PRIMARY KEY (tenant, id))"
    )
    run(
        f"CREATE TABLE turns ({key}, seq {d.int} NOT NULL, data {d.text} NOT NULL, "
        "PRIMARY KEY (tenant, conversation_id, seq))"
    )
    run(
        f"CREATE TABLE pages ({key}, page_index {d.int} NOT NULL, first_seq {d.int} NOT NULL, "
        f"last_seq {d.int} NOT NULL, tokens {d.int} NOT NULL, "
        "PRIMARY KEY (tenant, conversation_id, page_index))"
    )
    run(
        f"CREATE TABLE bookmarks ({key}, page_index {d.int} NOT NULL, data {d.text} NOT NULL, "
        "PRIMARY KEY (tenant, conversation_id, page_index))"
    )
    run(
        f"CREATE TABLE events ({key}, seq {d.int} NOT NULL, turn_seq {d.int} NOT NULL, "
        f"kind {d.text} NOT NULL, page_index {d.int}, detail {d.text} NOT NULL, "
        "PRIMARY KEY (tenant, conversation_id, seq))"
    )


def m002_conversations_by_created(run: Execute, d: Dialect) -> None:
    """Index for listing a tenant's conversations in creation order."""
    run("CREATE INDEX conversations_by_created ON conversations (tenant, created_at, id)")


def m003_page_state(run: Execute, d: Dialect) -> None:
    """Each page's own pager state (``ChangeSet.page_state``), upserted like bookmarks;
    the conversation's snapshot no longer holds it (conversations stored before have
    no rows here: their snapshot holds it). Both tables record the version that wrote
    each row, so a process catching up reads only the rows changed since its version
    (bookmark rows written before say 0)."""
    run(
        f"CREATE TABLE page_state (tenant {d.text} NOT NULL, conversation_id {d.text} NOT NULL, "
        f"page_index {d.int} NOT NULL, data {d.text} NOT NULL, version {d.int} NOT NULL, "
        "PRIMARY KEY (tenant, conversation_id, page_index))"
    )
    run(f"ALTER TABLE bookmarks ADD COLUMN version {d.int} NOT NULL DEFAULT 0")


MIGRATIONS: list[Migration] = [m001_initial, m002_conversations_by_created, m003_page_state]
"""Every migration, in order. Append only; never rename or reorder."""

MIGRATION_NAMES: list[str] = [m.__name__ for m in MIGRATIONS]


def pending(applied: Iterable[str], where: str) -> list[Migration]:
    """Migrations not yet applied; raise :class:`StoreError` on an unknown applied name."""
    done = set(applied)
    unknown = sorted(done - set(MIGRATION_NAMES))
    if unknown:
        raise StoreError(
            f"{where} was written by a newer copage (unknown migrations: {', '.join(unknown)}); "
            f"this copage knows {', '.join(MIGRATION_NAMES)}. Upgrade copage to open it."
        )
    return [m for m in MIGRATIONS if m.__name__ not in done]
