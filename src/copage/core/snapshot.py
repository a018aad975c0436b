"""A pager's persistence: its snapshot, its per-page states, and the restore from stored rows.

:meth:`copage.core.pager.Pager.snapshot`, :meth:`~copage.core.pager.Pager.page_state`,
:meth:`~copage.core.pager.Pager.rewind` and :meth:`~copage.core.pager.Pager.restore`
delegate here. The snapshot holds what the stored turns, pages, bookmarks and per-page
states don't, and its size does not grow with the pages. Snapshots stored by older
copage versions are read through the named migrations of :mod:`copage.core.state_upgrade`.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from copage.core import prompt
from copage.core.cache import PageCache
from copage.core.change_log import ChangeLog
from copage.core.changes import PageRecord
from copage.core.config import PagerConfig
from copage.core.grouped_index import GroupedIndex
from copage.core.keywords import Corpus
from copage.core.pager_stats import Counters, FullContext
from copage.core.paginate import Paginator
from copage.core.policies import EvictionPolicy
from copage.core.promptcache import PromptMeter
from copage.core.state_upgrade import migrate_page_rows, stored_counters
from copage.core.tokens import Tokenizer
from copage.core.types import Book, Bookmark, Page, PageId, Turn, page_id, page_index, render_turns


class Stored(Protocol):
    """The pager's fields that its snapshot and restore read and write."""

    config: PagerConfig
    tokenizer: Tokenizer
    turns: list[Turn]
    pages: list[Page]
    corpus: Corpus
    books: dict[int, Book]
    taken: dict[str, int]
    system: str | None
    counters: Counters
    cache: PageCache
    paginator: Paginator
    grouped: GroupedIndex
    prompt_meter: PromptMeter
    _uses_corpus: bool
    _turn_tokens: list[int]
    _closed_tokens: int
    _evicted_set: set[int]
    _stale_heap: list[tuple[int, int]]
    _resident_tokens: int
    _bookmark_tokens: int
    _refresh_owed: int
    _pins: list[PageId]
    _pins_user: int
    changes: ChangeLog
    full_context: FullContext

    def _page_tokens(self, pid: PageId) -> int: ...


def snapshot(pager: Stored) -> dict[str, Any]:
    """JSON-able pager state that the stored turns, pages, bookmarks and per-page
    states (:func:`page_state`) don't hold; its size does not grow with the pages."""
    cache = pager.cache.snapshot(pages=False)
    policy_state = cache.get("policy_state")
    if isinstance(policy_state, dict):
        # The query policy's page texts are the pages' own text: restore() sets
        # them again, so the snapshot does not carry the conversation twice.
        policy_state.pop("texts", None)
    return {
        "open_start": pager.paginator.start,
        "cache": cache,
        "counters": pager.counters.to_json(),
        "event_seq": pager.changes.seq,
        "page_rows": 1,
        "system": pager.system,
        "pins": {"user": pager._pins_user, "pages": list(pager._pins)},
        "groups": [[g.start, g.end, list(g.bookmark.keywords)] for g in pager.grouped.groups],
        "refresh_owed": pager._refresh_owed,
        "prompt_meter": pager.prompt_meter.to_json(),
    }


def page_state(pager: Stored, idx: int) -> dict[str, Any]:
    """JSON-able state of page ``idx`` that the stored page and bookmark don't hold: its
    access history (``first``, ``last``, ``count``) and its bookmark's ``epoch``."""
    first, last, count = pager.cache.history.page(page_id(idx))
    return {"epoch": pager.books[idx].epoch, "first": first, "last": last, "count": count}


def can_rewind(pager: Stored, n_turns: int, n_pages: int, state: Mapping[str, Any]) -> bool:
    """Whether the pager can go back to its first ``n_turns`` turns and ``n_pages``
    pages, given the snapshot stored then (see ``Pager.can_rewind``)."""
    if not (0 <= n_pages <= len(pager.pages) and 0 <= n_turns <= len(pager.turns)):
        return False
    # the closed pages tile the turns before the open page
    kept = pager.paginator.start - sum(len(p.turns) for p in pager.pages[n_pages:])
    return kept <= n_turns and state.get("open_start", 0) == kept


def cut_back(pager: Stored, n_turns: int, n_pages: int) -> None:
    """Take the turns from ``n_turns`` and the pages from ``n_pages`` out of ``pager``'s
    turns, pages, corpus and sums, so that it can be the ``base`` of a restore to the
    snapshot stored then. O(removed pages)."""
    gone = pager.pages[n_pages:]
    paged = pager.paginator.start
    kept = paged - sum(len(p.turns) for p in gone)
    if pager._uses_corpus:
        for page in reversed(gone):
            pager.corpus.remove(page.id)
    pager._closed_tokens -= sum(pager._turn_tokens[kept:paged])
    resident = set(pager.cache.resident)
    history = pager.cache.history
    for page in gone:  # the removed pages leave the sums restore(base=) starts from
        if page.id in resident:
            pager._resident_tokens -= page.tokens
        else:
            pager._evicted_set.discard(page.index)
            if page.index in pager.books:
                pager._bookmark_tokens -= pager.books[page.index].bookmark.tokens
        book = pager.books.pop(page.index, None)
        for k in book.lowered if book else ():
            pager.taken[k] -= 1
        for table in (history.first, history.last, history.count):
            table.pop(page.id, None)
    pager._stale_heap = [e for e in pager._stale_heap if e[1] < n_pages]
    heapq.heapify(pager._stale_heap)
    pager.turns = pager.turns[:n_turns]
    pager._turn_tokens = pager._turn_tokens[:n_turns]
    del pager.full_context.parts[n_turns:]
    pager.pages = pager.pages[:n_pages]


def _take_base(pager: Stored, base: Stored | None, turns: Sequence[Turn],
               pages: Sequence[PageRecord]) -> None:
    """The turns and pages: ``base``'s, then the stored ones after them."""
    start = 0
    if base is not None:
        if base.config != pager.config or len(base.turns) > len(turns):
            raise ValueError("base is not an earlier state of this conversation")
        start = len(base.turns)
        pager._turn_tokens = list(base._turn_tokens)
        pager.pages = list(base.pages)
        pager._closed_tokens = base._closed_tokens
        pager.corpus = base.corpus
    pager._turn_tokens += [pager.tokenizer.count(prompt.turn_content(t)) for t in turns[start:]]
    for rec in sorted(pages, key=lambda r: r.index):
        if rec.index != len(pager.pages):
            raise ValueError(f"page {rec.index} does not follow page {len(pager.pages)}")
        ts = tuple(turns[rec.first_seq : rec.last_seq + 1])
        text = render_turns(ts)
        page = Page(page_id(rec.index), rec.index, ts, text, rec.tokens)
        pager.pages.append(page)
        pager._closed_tokens += sum(pager._turn_tokens[rec.first_seq : rec.last_seq + 1])
        if pager._uses_corpus:
            pager.corpus.add(page.id, text)


def _take_books(pager: Stored, base: Stored | None, bookmarks: Mapping[int, Bookmark],
                epochs: Mapping[int, int]) -> None:
    """The bookmarks: ``base``'s, then those written since (an epoch changes with its
    bookmark)."""
    if base is not None:
        pager.books, pager.taken = dict(base.books), dict(base.taken)
    for idx, bm in bookmarks.items():
        old = pager.books.get(idx)
        for k in old.lowered if old else ():
            pager.taken[k] -= 1
        lowered = tuple(k.lower() for k in bm.keywords)
        for k in lowered:
            pager.taken[k] = pager.taken.get(k, 0) + 1
        pager.books[idx] = Book(bm, epochs.get(idx, len(pager.pages)), lowered)


def _take_cache(pager: Stored, base: Stored | None, state: Mapping[str, Any],
                rows: Mapping[int, Mapping[str, Any]], before_page_rows: bool) -> None:
    """The resident set, the policy's state and every page's access history."""
    config = pager.config
    policy = config.make_policy()
    pager.cache = PageCache.restore(policy, state["cache"], size_of=pager._page_tokens,
                                    batch=config.evict_batch, floor=config.budget_floor)
    history = pager.cache.history
    if before_page_rows:  # the histories were inside the cache's snapshot
        return
    known = base.cache.history if base is not None else None
    if known is not None:
        history.first, history.last = dict(known.first), dict(known.last)
        history.count = dict(known.count)
    for idx, row in rows.items():
        history.set_page(page_id(idx), int(row["first"]), int(row["last"]), int(row["count"]))
    # base's pages have their states (from base or the rows): check the rest
    checked = pager.pages[len(base.pages):] if base is not None else pager.pages
    missing = next((p.id for p in checked if p.id not in history.first), None)
    if missing is not None:
        raise ValueError(f"no stored state for page {missing}")


def _take_sums(pager: Stored, base: Stored | None, bookmarks: Collection[int]) -> None:
    """The evicted set, the stale-bookmark heap and the token sums; with ``base``, its
    sums with only the pages whose residency or bookmark changed (and the new pages)
    done again: catching up does not walk every page."""
    res = set(pager.cache.resident)
    redo: Collection[int] = range(len(pager.pages))
    if base is not None:
        was = {p for p in base.cache.resident if page_index(p) < len(base.pages)}
        redo = sorted({*range(len(base.pages), len(pager.pages)), *bookmarks,
                       *(page_index(p) for p in was ^ res)})
        pager._evicted_set = set(base._evicted_set)
        pager._stale_heap = list(base._stale_heap)  # cleaned lazily: extra entries are fine
        pager._resident_tokens = base._resident_tokens
        pager._bookmark_tokens = base._bookmark_tokens
        for idx in redo:
            if idx >= len(base.pages):
                continue
            if page_id(idx) in was:
                pager._resident_tokens -= base.pages[idx].tokens
            else:
                pager._evicted_set.discard(idx)
                pager._bookmark_tokens -= base.books[idx].bookmark.tokens
    for idx in redo:
        page = pager.pages[idx]
        if page.id in res:
            pager._resident_tokens += page.tokens
        else:
            pager._evicted_set.add(page.index)
            book = pager.books[page.index]
            pager._bookmark_tokens += book.bookmark.tokens
            heapq.heappush(pager._stale_heap, (book.epoch, page.index))


def restore_into(
    pager: Stored, turns: Sequence[Turn], pages: Sequence[PageRecord],
    bookmarks: Mapping[int, Bookmark], state: Mapping[str, Any], *, base: Stored | None,
    page_state: Mapping[int, Mapping[str, Any]] | None,
) -> None:
    """Fill ``pager``, new from its config, from stored rows (see ``Pager.restore``).

    ``page_state``: the stored per-page state of every page. A conversation stored
    before they were kept apart has them inside ``state`` instead; its pager then
    writes them all, once, with its next change.

    ``base``: this conversation's pager at an earlier version (same config), whose
    turns are the first of ``turns`` and whose pages the first stored ones; ``pages``
    then holds only the pages after them. Its counted turns, pages and corpus are
    reused, so the cost is that of what was added since, and ``base`` must not be
    used afterwards. ``ValueError`` if ``pages`` do not follow ``base``'s.
    With ``base``, ``bookmarks`` and ``page_state`` need hold only those written
    after ``base``'s version (the others are ``base``'s); a page that has neither
    a stored state nor one in ``base`` is a ``ValueError``.
    """
    pager.turns = list(turns)
    _take_base(pager, base, turns, pages)
    stored = migrate_page_rows(state, page_state)
    _take_books(pager, base, bookmarks, stored.epochs)
    pager.paginator.start = int(state.get("open_start", 0))
    if "cache" in state:
        _take_cache(pager, base, state, stored.rows, stored.before_page_rows)
    res = set(pager.cache.resident)
    if type(pager.cache.policy).set_page_text is not EvictionPolicy.set_page_text:
        for page in pager.pages:  # a policy that reads page texts (``query``)
            pager.cache.set_page_text(page.id, page.text)
    _take_sums(pager, base, bookmarks)
    pager.grouped.load(state.get("groups") or (), pager.pages, pager.books, pager._evicted_set,
                       base.grouped.groups if base is not None else ())
    pager._refresh_owed = int(state.get("refresh_owed", 0))
    try:
        pager.prompt_meter = PromptMeter.from_json(pager.tokenizer, state.get("prompt_meter"))
    except (ValueError, TypeError, AttributeError):  # a damaged count: a new one, the
        pass  # conversation itself loads (the meter only reports)
    pager.counters = Counters.from_json(stored_counters(state))
    pager.changes.seq = int(state.get("event_seq", 0))
    pager.system = state.get("system")
    _take_pins(pager, state.get("pins") or {}, res)
    # The latest user message is the query policy's query; it is not in the
    # snapshot (which is written only when pages change), so take it from the turns.
    last_user = next((t.text for t in reversed(pager.turns) if t.role == "user"), None)
    pager.cache.set_query(last_user)
    # An older snapshot: the next change writes every page's state, and the snapshot
    # without them (one O(pages) commit); from then on only changed pages.
    pager.changes.dirty = stored.before_page_rows and bool(pager.pages)
    pager.changes.epochs = set(range(len(pager.pages))) if pager.changes.dirty else set()
    pager.cache.history.touched.clear()


def _take_pins(pager: Stored, pins: Mapping[str, Any], res: Collection[PageId]) -> None:
    """The pages pinned for the turn, if the stored pins are of the latest user turn
    (or of a probe after it); else none."""
    user_seq = next((i for i in range(len(pager.turns) - 1, -1, -1)
                     if pager.turns[i].role == "user"), -1)
    pager._pins_user = int(pins.get("user", -1))
    if pager._pins_user >= user_seq:
        pager._pins = [str(p) for p in pins.get("pages", ()) if str(p) in res]
    else:
        pager._pins_user = user_seq


