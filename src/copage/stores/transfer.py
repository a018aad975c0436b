"""Export and import one conversation as JSON Lines, from any store into any store.

The file holds exactly what a store holds, in the stores' own encoding (the turn
and bookmark JSON of :mod:`copage.stores.codec`, the pager's snapshot and per-page
states as the pager wrote them), so nothing is translated and an imported
conversation continues exactly as the exported one would: the same next request,
byte for byte. One JSON object per line::

    {"copage": "conversation", "version": 1, "id": ..., "tenant": ..., "created_at": ...,
     "updated_at": ..., "stored_version": 57, "config": {paging settings},
     "state": {the pager's snapshot}}
    {"kind": "turn", "seq": 0, "turn": {"id": "t1", "role": "user", "text": ..., ...}}
    {"kind": "page", "index": 0, "first_seq": 0, "last_seq": 9, "tokens": 812}
    {"kind": "bookmark", "page": 0, "bookmark": {...}}
    {"kind": "page_state", "page": 0, "state": {...}}
    {"kind": "event", "seq": 0, "turn_seq": 9, "event": "admit", "page": 0, "detail": {}}
    {"kind": "end", "turns": 10, "pages": 1, "events": 1}

The ``end`` line makes a file cut short detectable. Reading checks every line
(a clear :class:`BadExport` naming the line) and that the paging state fits the
turns (by restoring the pager from it) before anything is written; the write is
one transaction (the store's ``restore_conversation``), so an import stores the
whole conversation or nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from copage.core.changes import ChangeSet, Event, PageRecord
from copage.core.config import PagerConfig
from copage.core.pager import Pager
from copage.core.types import Bookmark, Turn
from copage.stores import codec
from copage.stores.protocol import ConversationExists, PageStore, StoreError

__all__ = ["FORMAT", "VERSION", "BadExport", "Exported", "export_conversation",
           "import_conversation", "read_export", "write_conversation"]

FORMAT = "conversation"
VERSION = 1
_KINDS = ("turn", "page", "bookmark", "page_state", "event", "end")


class BadExport(StoreError, ValueError):
    """A conversation file that cannot be imported (the message names the line)."""


@dataclass(slots=True)
class Exported:
    """A conversation read from a file, checked and ready to store."""

    id: str
    tenant: str
    created_at: float
    updated_at: float
    config: dict[str, Any]
    state: dict[str, Any]
    #: The version (commits) the exported conversation had.
    stored_version: int = 1
    turns: list[Turn] = field(default_factory=list)
    pages: list[PageRecord] = field(default_factory=list)
    bookmarks: dict[int, Bookmark] = field(default_factory=dict)
    page_state: dict[int, dict[str, Any]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)

    def change(self) -> ChangeSet:
        """The whole conversation as one change onto an empty one."""
        return ChangeSet(
            turns=list(enumerate(self.turns)), pages=list(self.pages),
            bookmarks=sorted(self.bookmarks.items()), events=list(self.events),
            state=self.state, page_state=sorted(self.page_state.items()))


def export_conversation(store: PageStore, conversation_id: str, out: TextIO, *,
                        tenant: str = "default") -> int:
    """Write one stored conversation to ``out`` as JSON Lines; return the lines written.

    The conversation's lock is held while it is read, so a writer in another process
    cannot change it between the reads (the file is one consistent state).
    Raises ``ConversationNotFound`` when it is absent.
    """
    with store.lock(conversation_id, tenant=tenant):
        conv = store.load(conversation_id, tenant=tenant)
        events = store.events(conversation_id, tenant=tenant)
        info = next((c for c in store.list_conversations(tenant=tenant)
                     if c.id == conversation_id), None)
    name = f"conversation {conversation_id!r}"
    head = {"copage": FORMAT, "version": VERSION, "id": conv.id, "tenant": conv.tenant,
            "created_at": info.created_at if info else 0.0,
            "updated_at": info.updated_at if info else 0.0,
            "stored_version": conv.version, "config": conv.config, "state": conv.state}
    lines = [codec.dumps(head, name)]
    # The stores' own JSON text is spliced in as it is: one encoding, no translation.
    lines += [f'{{"kind":"turn","seq":{seq},"turn":{codec.turn_to_json(t)}}}'
              for seq, t in enumerate(conv.turns)]
    lines += [codec.dumps({"kind": "page", "index": p.index, "first_seq": p.first_seq,
                           "last_seq": p.last_seq, "tokens": p.tokens}, name)
              for p in conv.pages]
    lines += [f'{{"kind":"bookmark","page":{i},"bookmark":{codec.bookmark_to_json(b)}}}'
              for i, b in sorted(conv.bookmarks.items())]
    lines += [codec.dumps({"kind": "page_state", "page": i, "state": s}, name)
              for i, s in sorted(conv.page_state.items())]
    lines += [codec.dumps({"kind": "event", "seq": e.seq, "turn_seq": e.turn_seq,
                           "event": e.kind, "page": e.page_index, "detail": dict(e.detail)},
                          name) for e in events]
    lines.append(codec.dumps({"kind": "end", "turns": len(conv.turns),
                              "pages": len(conv.pages), "events": len(events)}, name))
    out.writelines(line + "\n" for line in lines)
    return len(lines)


def read_export(lines: Iterable[str], source: str = "<file>") -> Exported:
    """Parse and check a conversation file; :class:`BadExport` names the first bad line.

    Besides each line's shape, it checks that turns, pages and events are in order,
    that the ``end`` line closes the file with the right counts, and that the paging
    state fits the turns (the pager is restored from it, as opening it would).
    """
    reader = _Reader(source)
    n = 0
    for n, line in enumerate(lines, 1):
        reader.line(n, line)
    return reader.finish(n)


def write_conversation(store: PageStore, conv: Exported, *, conversation_id: str | None = None,
                       tenant: str = "default", replace: bool = False) -> str:
    """Store a read conversation under ``conversation_id`` (default: its own) in ``tenant``,
    all at once; return the id. Raises ``ConversationExists`` unless ``replace``."""
    cid = conversation_id or conv.id
    # The conversation's lock: a writer in another process (a proxy's turn) is not
    # midway through the conversation this replaces.
    with store.lock(cid, tenant=tenant):
        restore = getattr(store, "restore_conversation", None)
        if restore is not None:
            restore(cid, conv.config, conv.change(), tenant=tenant, created_at=conv.created_at,
                    updated_at=conv.updated_at, replace=replace, version=conv.stored_version)
        else:
            _create_then_commit(store, conv, cid, tenant, replace)
    return cid


def _create_then_commit(store: PageStore, conv: Exported, cid: str, tenant: str,
                        replace: bool) -> None:
    """For a store without a one-transaction restore: create, commit, remove on failure."""
    if store.exists(cid, tenant=tenant):
        if not replace:
            raise ConversationExists(f"conversation {cid!r} (tenant {tenant!r}) already exists")
        store.delete_conversation(cid, tenant=tenant)
    store.create_conversation(cid, conv.config, tenant=tenant, now=conv.created_at)
    try:
        store.commit(cid, conv.change(), tenant=tenant, now=conv.updated_at)
    except BaseException:
        store.delete_conversation(cid, tenant=tenant)
        raise


def import_conversation(store: PageStore, lines: Iterable[str], *, source: str = "<file>",
                        conversation_id: str | None = None, tenant: str = "default",
                        replace: bool = False) -> str:
    """:func:`read_export` then :func:`write_conversation`: nothing is written unless the
    whole file is good. Returns the conversation's id in ``store``."""
    conv = read_export(lines, source)
    return write_conversation(store, conv, conversation_id=conversation_id, tenant=tenant,
                              replace=replace)


class _Reader:
    """The state of reading one file, line by line."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.conv: Exported | None = None
        self.end: dict[str, Any] | None = None

    def fail(self, n: int, message: str) -> BadExport:
        return BadExport(f"{self.source}, line {n}: {message}")

    def line(self, n: int, text: str) -> None:
        if not text.strip():
            raise self.fail(n, "empty line (a conversation file has one JSON object a line)")
        try:
            data = json.loads(text)
        except ValueError as e:
            raise self.fail(n, f"not JSON ({e})") from None
        if not isinstance(data, dict):
            raise self.fail(n, "not a JSON object")
        if self.end is not None:
            raise self.fail(n, "a line after the 'end' line")
        if self.conv is None:
            self.conv = self._head(n, data)
            return
        kind = data.get("kind")
        if kind not in _KINDS:
            raise self.fail(n, f"unknown kind {kind!r} (expected one of {', '.join(_KINDS)})")
        try:
            getattr(self, "_" + kind)(n, data, self.conv)
        except KeyError as e:
            raise self.fail(n, f"a {kind} line needs the field {e}") from None
        except (TypeError, ValueError) as e:
            if isinstance(e, BadExport):
                raise
            raise self.fail(n, f"malformed {kind} line ({type(e).__name__}: {e})") from None

    def _head(self, n: int, data: dict[str, Any]) -> Exported:
        if data.get("copage") != FORMAT:
            raise self.fail(n, "not a copage conversation file (the first line should hold "
                            f'"copage": "{FORMAT}")')
        if data.get("version") != VERSION:
            raise self.fail(n, f"format version {data.get('version')!r} is not supported "
                            f"(this copage reads version {VERSION})")
        try:
            conv = Exported(
                id=_str(data["id"]), tenant=_str(data.get("tenant", "default")),
                created_at=float(data.get("created_at", 0.0)),
                updated_at=float(data.get("updated_at", 0.0)),
                config=_obj(data["config"]), state=_obj(data["state"]),
                stored_version=_int(data.get("stored_version", 1)))
            PagerConfig.from_dict(conv.config)
        except KeyError as e:
            raise self.fail(n, f"the header needs the field {e}") from None
        except (TypeError, ValueError) as e:
            raise self.fail(n, f"malformed header ({type(e).__name__}: {e})") from None
        if not conv.id:
            raise self.fail(n, "the header's id is empty")
        return conv

    def _turn(self, n: int, data: dict[str, Any], conv: Exported) -> None:
        seq = _int(data["seq"])
        if seq != len(conv.turns):
            raise self.fail(n, f"turn seq {seq} where seq {len(conv.turns)} was expected")
        try:
            conv.turns.append(codec.turn_from_json(json.dumps(_obj(data["turn"])), "it"))
        except codec.CorruptRow as e:
            raise self.fail(n, f"malformed turn ({str(e).removeprefix('malformed turn in it: ')})"
                            ) from None

    def _page(self, n: int, data: dict[str, Any], conv: Exported) -> None:
        page = PageRecord(_int(data["index"]), _int(data["first_seq"]),
                          _int(data["last_seq"]), _int(data["tokens"]))
        if page.index != len(conv.pages):
            raise self.fail(n, f"page index {page.index} where {len(conv.pages)} was expected")
        start = conv.pages[-1].last_seq + 1 if conv.pages else 0
        if page.first_seq != start or page.last_seq < page.first_seq \
                or page.last_seq >= len(conv.turns):
            raise self.fail(n, f"page {page.index} holds turns {page.first_seq}..{page.last_seq}"
                            f", which do not follow page {page.index - 1}'s or are not in the "
                            "file's turns")
        conv.pages.append(page)

    def _bookmark(self, n: int, data: dict[str, Any], conv: Exported) -> None:
        index = self._page_index(n, data, conv)
        try:
            conv.bookmarks[index] = codec.bookmark_from_json(json.dumps(_obj(data["bookmark"])),
                                                             "it")
        except codec.CorruptRow as e:
            raise self.fail(n, "malformed bookmark "
                            f"({str(e).removeprefix('malformed bookmark in it: ')})") from None

    def _page_state(self, n: int, data: dict[str, Any], conv: Exported) -> None:
        conv.page_state[self._page_index(n, data, conv)] = _obj(data["state"])

    def _page_index(self, n: int, data: dict[str, Any], conv: Exported) -> int:
        index = _int(data["page"])
        if not 0 <= index < len(conv.pages):
            raise self.fail(n, f"page {index} is not among the file's {len(conv.pages)} pages")
        return index

    def _event(self, n: int, data: dict[str, Any], conv: Exported) -> None:
        page = data.get("page")
        event = Event(_int(data["seq"]), _int(data["turn_seq"]), _str(data["event"]),
                      None if page is None else _int(page), _obj(data.get("detail", {})))
        if conv.events and event.seq <= conv.events[-1].seq:
            raise self.fail(n, f"event seq {event.seq} does not follow {conv.events[-1].seq}")
        conv.events.append(event)

    def _end(self, n: int, data: dict[str, Any], conv: Exported) -> None:
        want = {"turns": len(conv.turns), "pages": len(conv.pages), "events": len(conv.events)}
        for key, count in want.items():
            if _int(data[key]) != count:
                raise self.fail(n, f"the end line counts {data[key]} {key}, the file holds "
                                f"{count}")
        self.end = data

    def finish(self, n: int) -> Exported:
        if self.conv is None:
            raise BadExport(f"{self.source}: empty file (no header line)")
        if self.end is None:
            raise BadExport(f"{self.source}, line {n}: the file ends without its 'end' line "
                            "(cut short?)")
        conv = self.conv
        try:  # the paging state must fit the turns, as opening the conversation needs
            pager = Pager.restore(PagerConfig.from_dict(conv.config), conv.turns, conv.pages,
                                  conv.bookmarks, conv.state, page_state=conv.page_state)
            _fits(pager, conv)
        except Exception as e:  # noqa: BLE001 - any misfit is the file's fault: say so
            raise BadExport(f"{self.source}: the paging state does not fit the turns "
                            f"({type(e).__name__}: {e})") from None
        return conv


def _fits(pager: Pager, conv: Exported) -> None:
    """What :meth:`Pager.restore` takes on trust: the resident pages exist, every page
    has its bookmark, and the open page starts after the last closed one."""
    ids = {p.id for p in pager.pages}
    stray = [p for p in pager.resident if p not in ids]
    if stray:
        raise ValueError(f"resident pages {stray} are not among the {len(ids)} pages")
    missing = [p.index for p in conv.pages if p.index not in conv.bookmarks]
    if missing:
        raise ValueError(f"pages {missing} have no bookmark")
    start = conv.pages[-1].last_seq + 1 if conv.pages else 0
    if pager.paginator.start != start:
        raise ValueError(f"the open page starts at turn {pager.paginator.start}, the closed "
                         f"pages end before turn {start}")


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {value!r}")
    return value


def _obj(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"expected a JSON object, got {type(value).__name__}")
    return dict(value)
