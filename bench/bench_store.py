"""Appended turns per second for each page store (one commit per turn).

Each commit is a ChangeSet with 1 turn (~200 characters), a state snapshot of
about 1 KB and 1 event; every 10th turn also closes a page and upserts its
bookmark. Prints one line per backend.

    .venv/bin/python bench/bench_store.py [--turns 2000] [--backends memory,sqlite-full,...]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path

from copage.core.types import Bookmark, Turn
from copage.stores import ChangeSet, Event, PageRecord, PageStore, StoreError
from copage.stores.inmemory import MemoryStore
from copage.stores.sqlite import SQLiteStore

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"
BACKENDS = ("memory", "sqlite-full", "sqlite-normal", "postgres")


def change_for(seq: int) -> ChangeSet:
    """The ChangeSet of turn ``seq``: 1 turn, ~1 KB state, 1 event, a page every 10 turns."""
    turn = Turn(
        id=f"t{seq}",
        role="user" if seq % 2 == 0 else "assistant",
        text=f"turn {seq}: " + "lorem ipsum dolor sit amet " * 7,
        speaker="Ann",
        session=1,
    )
    state = {
        "resident": [f"p{i}" for i in range(5)],
        "clock": seq,
        "policy": {"history": {f"p{i}": [seq - i, seq - 2 * i] for i in range(40)}},
    }
    change = ChangeSet(
        turns=[(seq, turn)],
        state=state,
        events=[Event(seq=seq, turn_seq=seq, kind="hit", page_index=0)],
    )
    if seq % 10 == 9:
        index = seq // 10
        change.pages.append(PageRecord(index, seq - 9, seq, 420))
        change.bookmarks.append(
            (index, Bookmark(f"p{index + 1}", ("alpha", "beta"), f"[p{index + 1}:alpha, beta]", 9))
        )
    return change


def run(store: PageStore, turns: int) -> float:
    """Append ``turns`` turns, one commit each; return turns per second."""
    cid = f"bench-{uuid.uuid4().hex[:8]}"
    store.create_conversation(cid, {"bench": True})
    version = 0
    start = time.perf_counter()
    for seq in range(turns):
        version = store.commit(cid, change_for(seq), expected_version=version)
    elapsed = time.perf_counter() - start
    assert store.load(cid).version == turns
    return turns / elapsed


def main() -> None:
    """Run the benchmark for the chosen backends and print turns per second."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--postgres-url", default=PG_URL)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.backends.split(","):
            store: PageStore
            if name == "memory":
                store = MemoryStore()
            elif name.startswith("sqlite-"):
                sync = name.split("-", 1)[1].upper()
                store = SQLiteStore(Path(tmp) / f"{name}.db", synchronous=sync)
            elif name == "postgres":
                try:
                    from copage.stores.postgres import PostgresStore

                    schema = f"bench_{uuid.uuid4().hex[:8]}"
                    store = PostgresStore(args.postgres_url, schema=schema)
                except (ImportError, StoreError) as e:
                    print(f"{name:14s} skipped: {e}")
                    continue
            else:
                raise SystemExit(f"unknown backend {name!r}; valid: {', '.join(BACKENDS)}")
            try:
                rate = run(store, args.turns)
                print(f"{name:14s} {rate:9.0f} turns/s  ({args.turns} commits)", flush=True)
            finally:
                if name == "postgres":
                    _drop_schema(args.postgres_url, schema)
                store.close()


def _drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


if __name__ == "__main__":
    main()
