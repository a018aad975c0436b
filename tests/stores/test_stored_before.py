"""Conversations stored before the pager's per-page states were kept apart reopen.

``data/stored_before_page_rows.json`` was written by copage at commit f7a8868, whose
snapshot held every page's access history and bookmark epoch: four conversations
(LRU, LFU, LRFU, FIFO with the flat index) as that version stored them, and what
that version showed after reopening each one, adding 12 turns and a recall (the
context for a question, the resident pages, the stats). Every store must reopen
them and continue exactly so, then store them in the new form.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from store_helpers import StoreFactory

from copage import PagedMemory
from copage.stores import PageStore, codec
from copage.stores.migrations import MIGRATION_NAMES
from copage.stores.protocol import ChangeSet, PageRecord
from copage.stores.sqlite import SQLiteStore

DATA = json.loads((Path(__file__).parent / "data" / "stored_before_page_rows.json").read_text())
CONVERSATIONS = {c["policy"]: c for c in DATA["conversations"]}
TOPICS = ["garden", "piano", "train", "violin", "river"]


def more_turns(mem: PagedMemory, start: int, stop: int) -> None:
    """The turns the generator added (the same texts)."""
    for t in range(start, stop):
        topic = TOPICS[t % 5]
        mem.add("user", f"question {t}: what about the {topic} number {t}?")
        mem.add("assistant", f"answer {t}: the {topic} is fine, item {t}.")


def write_old(store: PageStore, stored: dict[str, Any], cid: str = "old") -> None:
    """Store the conversation's rows exactly as the older copage held them."""
    store.create_conversation(cid, stored["config"])
    turns = [codec.turn_from_json(json.dumps(t), "fixture") for t in stored["turns"]]
    bookmarks = {int(i): codec.bookmark_from_json(json.dumps(b), "fixture")
                 for i, b in stored["bookmarks"].items()}
    store.commit(cid, ChangeSet(
        turns=list(enumerate(turns)), pages=[PageRecord(*p) for p in stored["pages"]],
        bookmarks=sorted(bookmarks.items()), state=stored["state"]))


def shown(mem: PagedMemory) -> dict[str, Any]:
    """What the generator recorded after its 12 turns and recall."""
    ctx = mem.context("what about the piano?")
    stats = mem.stats().to_dict()
    stats.pop("prompt_cache", None)
    stats.pop("savings", None)  # read from prompt_cache, added since
    # the fixture's figure is what context() builds; stats() now counts the request sent
    stats["prompt_tokens"] = mem.pager.stats().prompt_tokens
    # counted since the fixture was written; none of its turns had a fill
    assert (stats.pop("fills"), stats.pop("fill_pages")) == (0, 0)
    return {"resident": list(mem.resident), "stats": stats, "messages": ctx.messages,
            "tools": ctx.tools}


def continue_as_before(store: PageStore, policy: str, cid: str = "old") -> None:
    mem = PagedMemory(store=store, conversation_id=cid)
    more_turns(mem, 36, 48)
    mem.recall("p3")
    assert shown(mem) == CONVERSATIONS[policy]["after"]
    # Stored in the new form now: a bounded snapshot and one state row per page.
    conv = store.load(cid)
    assert "epochs" not in conv.state and "first" not in conv.state["cache"]["history"]
    assert sorted(conv.page_state) == [p.index for p in conv.pages]
    again = PagedMemory(store=store, conversation_id=cid)
    assert shown(again) == shown(mem)


@pytest.mark.parametrize("policy", sorted(CONVERSATIONS))
def test_an_older_conversation_reopens_and_continues(stores: StoreFactory, policy: str) -> None:
    store = stores.open()
    write_old(store, CONVERSATIONS[policy]["stored"])
    continue_as_before(store, policy)


def test_an_older_sqlite_database_is_migrated_and_its_conversations_reopen(
        tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with SQLiteStore(path) as store:  # make the database as the older copage left it
        for policy in ("lru", "lfu"):
            write_old(store, CONVERSATIONS[policy]["stored"], cid=policy)
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE page_state")
        db.execute("ALTER TABLE bookmarks DROP COLUMN version")
        db.execute("DELETE FROM _migrations WHERE name = 'm003_page_state'")
    with SQLiteStore(path) as store:
        with sqlite3.connect(path) as db:
            names = [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert names == MIGRATION_NAMES
        for policy in ("lru", "lfu"):
            continue_as_before(store, policy, cid=policy)
