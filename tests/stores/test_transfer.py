"""Export and import (copage.stores.transfer, PagedMemory.export_jsonl / import_jsonl):
SQLite -> PostgreSQL continues the conversation exactly; bad files name their line and
write nothing; an existing id is kept unless replace."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from store_helpers import PG_URL

from copage.memory import PagedMemory
from copage.stores import ConversationExists, open_store
from copage.stores.transfer import (
    BadExport,
    export_conversation,
    import_conversation,
    read_export,
    write_conversation,
)

TOPICS = ["peanut allergy", "the Lisbon trip", "quarterly budget", "piano lessons",
          "garden tomatoes", "the broken bicycle", "tax forms", "a birthday cake"]


def _build(mem: PagedMemory, turns: int = 48) -> None:
    """A conversation long enough to evict pages, with tool calls, times and recalls."""
    mem.add("system", "You are a careful assistant.")
    for i in range(turns):
        topic = TOPICS[i % len(TOPICS)]
        if i % 2 == 0:
            mem.add("user", f"Turn {i}: tell me about {topic}, detail {i * 7}.",
                    timestamp=f"2026-01-{1 + i % 28:02d}T10:{i % 60:02d}:00Z", speaker="ana")
        elif i % 11 == 5:
            mem.add("assistant", "", tool_calls=[{"id": f"call{i}", "type": "function",
                                                   "function": {"name": "lookup",
                                                                "arguments": '{"q": "x"}'}}])
            mem.add("tool", f"lookup result {i}: {topic} is fine", tool_call_id=f"call{i}")
        else:
            mem.add("assistant", f"About {topic}: note {i}, number {i * 13}.")
        if i in (30, 40):
            mem.recall(mem.evicted[0])


def _same_next_request(a: PagedMemory, b: PagedMemory) -> None:
    assert a.turns == b.turns
    assert a.resident == b.resident and a.evicted == b.evicted
    assert a.bookmarks() == b.bookmarks()
    for mem in (a, b):
        mem.add("user", "What did I say about the Lisbon trip?")
    ca, cb = a.context(), b.context()
    dump = lambda c: json.dumps([c.messages, c.tools], sort_keys=False)
    assert dump(ca).encode() == dump(cb).encode()
    assert a.recall(a.evicted[-1]) == b.recall(b.evicted[-1])
    assert json.dumps(a.context().messages) == json.dumps(b.context().messages)
    assert a.stats().to_dict() == b.stats().to_dict()


@pytest.mark.postgres
def test_sqlite_to_postgres_continues_exactly(tmp_path: Path,
                                              pg_schema: Callable[[], str]) -> None:
    src = PagedMemory(store=f"sqlite://{tmp_path / 'a.db'}", conversation_id="trip",
                      boundary="fixed_4", resident_pages=2, policy="lru")
    _build(src)
    assert len(src.evicted) >= 5  # pages were evicted: the paging state matters
    path = tmp_path / "trip.jsonl"
    lines = src.export_jsonl(path)
    assert lines == len(path.read_text().splitlines())
    pg = open_store(f"{PG_URL}?schema={pg_schema()}")
    dst = PagedMemory.import_jsonl(path, store=pg)
    assert dst.conversation_id == "trip"
    assert pg.events("trip") == src.store.events("trip")
    before = {c.id: c for c in src.store.list_conversations()}["trip"]
    after = {c.id: c for c in pg.list_conversations()}["trip"]
    assert (after.created_at, after.updated_at, after.turns, after.pages) == \
        (before.created_at, before.updated_at, before.turns, before.pages)
    # reopened from each store (nothing cached), the next turn gives the same request
    a = PagedMemory(store=src.store, conversation_id="trip", create=False)
    b = PagedMemory(store=pg, conversation_id="trip", create=False)
    _same_next_request(a, b)
    # after the same turns on both, each exports the same file (but for its header times)
    back = io.StringIO()
    export_conversation(pg, "trip", back)
    first = io.StringIO()
    export_conversation(src.store, "trip", first)
    strip = lambda t: [ln for ln in t.splitlines() if '"copage"' not in ln]
    assert strip(back.getvalue()) == strip(first.getvalue())
    pg.close()


def _exported(tmp_path: Path) -> list[str]:
    mem = PagedMemory(store=f"sqlite://{tmp_path / 'src.db'}", conversation_id="c1",
                      boundary="fixed_4", resident_pages=2)
    _build(mem, 24)
    out = io.StringIO()
    mem.export_jsonl(out)
    return out.getvalue().splitlines(keepends=True)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda ls: ls[:-1] + ['{"kind": "end", "turns": 1'], "line {last}: not JSON"),
    (lambda ls: ls[:-1], "line {prev}: the file ends without its 'end' line"),
    (lambda ls: [ls[0].replace('"version":1', '"version":9'), *ls[1:]],
     "line 1: format version 9 is not supported"),
    (lambda ls: [ls[0], ls[1].replace('"role":"user",', ""), *ls[2:]],
     "line 2: malformed turn"),
    (lambda ls: [ls[0], ls[1].replace('"seq":0', '"seq":3'), *ls[2:]],
     "line 2: turn seq 3 where seq 0 was expected"),
    (lambda ls: ls[:5] + ['{"kind": "mystery"}\n'] + ls[5:], "line 6: unknown kind 'mystery'"),
    (lambda ls: ['{"a": 1}\n', *ls[1:]], "line 1: not a copage conversation file"),
    (lambda ls: [*ls, "{}\n"], "line {after}: a line after the 'end' line"),
])
def test_bad_files_name_the_line_and_write_nothing(
        tmp_path: Path, edit: Callable[[list[str]], list[str]], message: str) -> None:
    lines = edit(_exported(tmp_path))
    target = open_store(f"sqlite://{tmp_path / 'dst.db'}")
    with pytest.raises(BadExport) as err:
        import_conversation(target, lines, source="c1.jsonl")
    n = len(lines)
    expected = message.format(last=n, prev=n, after=n)
    assert f"c1.jsonl, {expected}" in str(err.value)
    assert "\n" not in str(err.value)
    assert not target.exists("c1") and target.list_conversations() == []


def test_state_that_does_not_fit_the_turns_is_refused(tmp_path: Path) -> None:
    lines = _exported(tmp_path)
    head = json.loads(lines[0])
    head["state"]["cache"]["resident"] = [["p999", 0]]
    lines[0] = json.dumps(head) + "\n"
    target = open_store("memory://")
    with pytest.raises(BadExport, match=r"paging state does not fit .*p999"):
        import_conversation(target, lines, source="c1.jsonl")
    assert not target.exists("c1")
    head["state"]["cache"]["resident"] = []
    head["state"]["open_start"] = 3
    lines[0] = json.dumps(head) + "\n"
    with pytest.raises(BadExport, match="open page starts at turn 3"):
        import_conversation(target, lines, source="c1.jsonl")


@pytest.mark.parametrize("kind", ["memory", "sqlite", pytest.param("postgres",
                                                                   marks=pytest.mark.postgres)])
def test_a_failure_while_writing_leaves_nothing(tmp_path: Path, kind: str,
                                                request: pytest.FixtureRequest) -> None:
    """The store rejects the last row (an event seq twice, which only the store checks):
    the transaction is rolled back, no empty or partial conversation is left, and an
    existing conversation under --replace survives too."""
    url = {"memory": "memory://", "sqlite": f"sqlite://{tmp_path / 'dst.db'}"}.get(kind) \
        or f"{PG_URL}?schema={request.getfixturevalue('pg_schema')()}"
    target = open_store(url)
    good = _exported(tmp_path)
    conv = read_export(good, "c1.jsonl")
    conv.events.append(conv.events[-1])  # written last; the store refuses the repeated seq
    with pytest.raises(Exception, match="event seq"):
        write_conversation(target, conv)
    assert not target.exists("c1")
    import_conversation(target, good)
    version = target.load("c1").turns
    with pytest.raises(Exception, match="event seq"):
        write_conversation(target, conv, replace=True)
    assert target.load("c1").turns == version  # the one it was to replace is intact
    target.close()


def test_existing_id_is_kept_unless_replace(tmp_path: Path) -> None:
    lines = _exported(tmp_path)
    target = open_store(f"sqlite://{tmp_path / 'dst.db'}")
    other = PagedMemory(store=target, conversation_id="c1")
    other.add("user", "mine, not the file's")
    with pytest.raises(ConversationExists):
        import_conversation(target, lines)
    assert [t.text for t in target.load("c1").turns] == ["mine, not the file's"]
    assert import_conversation(target, lines, conversation_id="c2") == "c2"
    exported = json.loads(lines[0])["stored_version"]
    assert target.load("c2").version == exported > 20  # the version goes along
    for _ in range(exported + 3):
        other.add("user", "more of mine")
    mine = target.load("c1").version
    import_conversation(target, lines, replace=True)
    assert target.load("c1").turns == target.load("c2").turns
    assert len(target.load("c1").turns) > 20
    # past the replaced one's version: a cached copy of it is never taken for this one
    assert target.load("c1").version == mine + 1 > exported
