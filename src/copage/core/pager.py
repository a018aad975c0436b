"""The pager: pages, the resident set, bookmarks and recall, as pure state.

:class:`Pager` does no I/O. Each operation records what changed in a
:class:`~copage.core.changes.ChangeSet` that the caller drains and
persists (see :class:`copage.memory.PagedMemory`). Per-turn cost is bounded by the
size of the open page and the resident set, not by the conversation length:
pages are built once when they close, token sums are kept incrementally, and the
bookmark index is re-joined only when it changes, which is only when pages close
(stale bookmarks are refreshed then: :mod:`copage.core.bookkeeping`).
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from copage.core import bookkeeping, model_context, prompt, recall_tool, snapshot
from copage.core.bookmarks import get_format
from copage.core.boundaries import get_boundary
from copage.core.cache import PageCache
from copage.core.change_log import ChangeLog
from copage.core.changes import ChangeSet, PageRecord
from copage.core.config import PagerConfig
from copage.core.evicted_search import EvictedMatch, EvictedSearch
from copage.core.grouped_index import GroupedIndex
from copage.core.groups import Group
from copage.core.keywords import Corpus, refreshes_with_corpus, uses_corpus
from copage.core.model_context import Context
from copage.core.pager_stats import NOT_DEMAND, Counters, FullContext, PagerStats
from copage.core.paginate import Paginator, Span
from copage.core.passages import PassageIndex
from copage.core.promptcache import PromptMeter
from copage.core.recall_text import RecallResult
from copage.core.retrieval import BM25Index
from copage.core.tokens import get_tokenizer
from copage.core.types import (
    Book,
    Bookmark,
    Page,
    PageId,
    Turn,
    page_id,
    page_index,
    parse_page_arg,
    render_turns,
)

__all__ = ["Context", "Counters", "EvictedMatch", "Pager", "PagerStats", "RecallResult"]


class Pager:
    """Pages a conversation. See the module docstring.

    Args:
        config: the settings (``belady``'s future comes in its policy registry, see
            :func:`copage.eval.sim_pager.with_future`).
    """

    def __init__(self, config: PagerConfig | None = None) -> None:
        self.config = cfg = config or PagerConfig()
        # Hook for the simulation, set only on an empty pager (and ``paginator`` replaced
        # by a replaying one): make bookmarks only in refresh_all_bookmarks
        # (copage.eval.sim_pager.simulation_pager).
        self.defer_bookmarks = False
        self.tokenizer = get_tokenizer(cfg.tokenizer)
        self.boundary = get_boundary(cfg.boundary, **dict(cfg.boundary_options))
        self.extractor = cfg.make_extractor()  # from cfg.extractors, else the global one
        self.format = get_format(cfg.bookmark_format)
        self._example, self._example_range = bookkeeping.examples(self.format)
        self._uses_corpus = uses_corpus(self.extractor)
        self._refreshes = refreshes_with_corpus(self.extractor)
        self.cache = PageCache(
            cfg.make_policy(), cfg.resident_pages,
            token_budget=cfg.token_limit, size_of=self._page_tokens, batch=cfg.evict_batch,
            floor=cfg.budget_floor,
        )
        self.paginator = Paginator(self.boundary)
        self.turns: list[Turn] = []
        self.pages: list[Page] = []
        self.corpus = Corpus()
        self.books: dict[int, Book] = {}
        self.taken: dict[str, int] = {}
        self.system: str | None = None
        self.counters = Counters()
        self._turn_tokens: list[int] = []
        self._closed_tokens = 0
        self._evicted_set: set[int] = set()
        self.search = EvictedSearch()  # its BM25 and passage indexes (derived state)
        self._stale_heap: list[tuple[int, int]] = []  # (epoch, page index), lazily cleaned
        self._refresh_owed = 0  # stale-bookmark refreshes due (refresh_per_page per close)
        self._resident_tokens = 0  # tokens of resident closed pages
        self._bookmark_tokens = 0  # tokens of the bookmarks of evicted pages
        # the bookmark index: its groups, their sums and its text
        self.grouped = GroupedIndex(cfg, self.tokenizer, self.format, self._example_range)
        self.changes = ChangeLog()  # what to store since the last drain
        # Pages paged in (or recalled) since the turn began: a later page-in of the same
        # turn evicts them only when nothing else can go, so a speculative page-in is not
        # undone by the recall that follows it. ``_pins_user`` is the user turn they
        # belong to (-1: none), so a restored pager drops pins of an earlier turn.
        self._pins: list[PageId] = []
        self._pins_user = -1
        self.prompt_meter = PromptMeter(self.tokenizer)  # stored in the snapshot
        self.full_context = FullContext()  # cut back by pop_turn and rewind
        count = self.tokenizer.count  # the preamble and the tool schema, shown once paging
        self._fixed_tokens = count(self._preamble()) + count(prompt.tool_tokens_text(self.tools()))

    # ----------------------------------------------------------- conversation
    def add(self, turn: Turn) -> list[PageId]:
        """Append a turn; return the ids of pages that closed."""
        seq = len(self.turns)
        tokens = self.tokenizer.count(prompt.turn_content(turn))  # may raise: nothing changed yet
        self.turns.append(turn)
        self._turn_tokens.append(tokens)
        self.changes.pending.turns.append((seq, turn))
        if turn.role == "user":
            self.cache.set_query(turn.text)
            self._pins, self._pins_user = [], seq
        evictions = self.counters.evictions
        closed = [self._close(s) for s in self.paginator.step(self.turns)]
        if closed:
            self._refresh_owed += self.config.refresh_per_page * len(closed)
            # Refresh stale bookmarks only when this turn's prompt changes anyway (an
            # eviction batch), so that between batches the prefix stays cacheable.
            if self.counters.evictions != evictions or self.config.evict_batch == 1:
                bookkeeping.refresh_stale(self)
            self._maybe_regroup()
        return closed

    def pop_turn(self) -> Turn | None:
        """Remove the latest turn when it is in the open page and return it; None (nothing
        changed) when there is no turn or the latest is on a closed page (a page's
        closing is not undone). O(1): pages, bookmarks and the resident set stay."""
        seq = len(self.turns) - 1
        if seq < self.paginator.start:
            return None
        turn = self.turns.pop()
        self._turn_tokens.pop()
        del self.full_context.parts[seq:]
        pending = self.changes.pending
        if pending.turns and pending.turns[-1][0] == seq:
            pending.turns.pop()  # added in this transaction: never stored
        else:
            pending.truncate = seq if pending.truncate is None else min(pending.truncate, seq)
        if turn.role == "user":
            last_user = next((t.text for t in reversed(self.turns) if t.role == "user"), None)
            self.cache.set_query(last_user)
        return turn

    def begin_turn(self) -> None:
        """Start a turn without adding a user message (a probe): pages recalled before
        are no longer protected. Adding a user turn does this by itself."""
        if self._pins:
            self._pins = []
            self.changes.dirty = True
        self._pins_user = len(self.turns)

    def close_open_page(self) -> list[PageId]:
        """Close the open page (end of a conversation, or before probes)."""
        closed = [self._close(s) for s in self.paginator.step(self.turns, final=True)]
        if closed:
            self._maybe_regroup()
        return closed

    def _close(self, span: Span) -> PageId:
        idx = len(self.pages)
        turns = tuple(self.turns[span.start : span.end])
        text = render_turns(turns)
        page = Page(page_id(idx), idx, turns, text, self.tokenizer.count(text))
        self.pages.append(page)
        self._closed_tokens += sum(self._turn_tokens[span.start : span.end])
        self.cache.set_page_text(page.id, text)
        if self.defer_bookmarks:
            # Simulation of placement "end": bookmarks are made once, at the end.
            self.books[idx] = Book(Bookmark(page.id, (), "", 0, self.format.name), 0)
            self.changes.epochs.add(idx)
        else:
            if self._uses_corpus:
                self.corpus.add(page.id, text)
            bookkeeping.set_bookmark(self, idx, bookkeeping.keywords(self, page))
        self.changes.pending.pages.append(PageRecord(idx, span.start, span.end - 1, page.tokens))
        self._event("admit", idx)
        self._resident_tokens += page.tokens
        for victim in self.cache.admit(page.id):
            self._evicted(victim)
        self.grouped.lines = None
        return page.id

    @property
    def open_turns(self) -> Sequence[Turn]:
        """Turns of the open page (always resident)."""
        return self.turns[self.paginator.start :]

    # -------------------------------------------------------------- bookmarks
    def refresh_all_bookmarks(self, keywords: dict[PageId, tuple[str, ...]] | None = None) -> None:
        """Recompute every bookmark with the whole conversation known (batch extraction).

        ``keywords`` may supply the batch result (the simulation reuses it across cells).
        (:mod:`copage.core.bookkeeping`.)
        """
        bookkeeping.refresh_all(self, keywords)

    def batch_keywords(self) -> dict[PageId, tuple[str, ...]]:
        """Keywords of every page by the extractor's batch mode (whole conversation)."""
        return bookkeeping.batch_keywords(self)

    def bookmark(self, pid: PageId) -> Bookmark:
        """The current bookmark of a page."""
        return self.books[self._index(pid)].bookmark

    # ----------------------------------------------------------------- access
    @property
    def evicted_index(self) -> BM25Index[int]:
        """BM25 over the evicted pages' full text (content words), keyed by page index
        (recall by query, speculative page-in); built on first use, then kept up to
        date on every eviction and page-in, so IDF covers exactly the evicted pages."""
        return self.search.evicted_index(self.pages, self._evicted_set)

    @property
    def closed_index(self) -> BM25Index[int]:
        """BM25 over every closed page's full text, keyed by page index (a search of the
        whole memory), built on first use and brought up to date on every use."""
        return self.search.closed_index(self.pages)

    @property
    def passages(self) -> PassageIndex:
        """BM25 over overlapping passages of the closed pages' turns
        (:class:`~copage.core.passages.PassageIndex`: the speculative fill's unit), built
        on first use and brought up to date with the closed pages on every use."""
        return self.search.passage_index(self.pages)

    def search_evicted(self, text: str) -> EvictedMatch:
        """The evicted page whose text best matches ``text`` (BM25 with the distinct
        content words of ``text`` as the query; ties: the earliest page)."""
        return self.search.best(text, self.pages, self._evicted_set)

    def is_resident(self, pid: PageId) -> bool:
        return pid in self.cache

    @property
    def resident(self) -> list[PageId]:
        """Resident closed pages, in page order."""
        return sorted(self.cache.resident, key=page_index)

    @property
    def evicted(self) -> list[PageId]:
        """Closed pages not resident, in page order."""
        return [page_id(i) for i in sorted(self._evicted_set)]

    def access(self, pid: PageId, *, protect: Collection[PageId] = (), kind: str = "probe") -> bool:
        """Use a page; page it in if evicted. True on a hit.

        ``kind`` says who uses it: ``recall`` and ``speculative`` page-ins are
        counted apart from demand uses (``probe``, the default), see :class:`Counters`.
        Pages they bring in stay protected for the rest of the turn (see
        :meth:`begin_turn`): a later recall of the turn evicts them only when no
        other page can go.
        """
        idx = self._index(pid)
        pid = page_id(idx)
        if kind in NOT_DEMAND:
            protect = {*protect, *self._pins}
        result = self.cache.access(pid, protect=protect)
        if kind in NOT_DEMAND and pid not in self._pins:
            self._pins.append(pid)
            self.changes.dirty = True
        self.counters.count_use(kind, bool(result.hit))
        if result.hit:
            self._event("hit", idx, {"by": kind})
        else:
            self._event("fault", idx, {"by": kind})
            self._evicted_set.discard(idx)
            self.search.page_in(idx)
            self._resident_tokens += self.pages[idx].tokens
            self._bookmark_tokens -= self.books[idx].bookmark.tokens
            self.grouped.shown(idx, -self.books[idx].bookmark.tokens)
        for victim in result.evicted:
            self._evicted(victim)
        self.grouped.lines = None
        return bool(result.hit)

    def _evicted(self, pid: PageId) -> None:
        idx = self._index(pid)
        self.counters.evictions += 1
        self._evicted_set.add(idx)
        self.search.evict(self.pages[idx])
        self._resident_tokens -= self.pages[idx].tokens
        self._bookmark_tokens += self.books[idx].bookmark.tokens
        self.grouped.shown(idx, self.books[idx].bookmark.tokens)
        heapq.heappush(self._stale_heap, (self.books[idx].epoch, idx))
        self._event("evict", idx)

    def recall(self, page: object = None, *, query: object = None) -> RecallResult:
        """The recall tool: page a page in and return its text. Never raises.

        Exactly one of ``page`` and ``query`` (when ``recall_by_query`` is on).
        Errors come back as ``status="error"`` with a text meant for the model
        (what a recall does: :mod:`copage.core.recall_tool`; the answers' text:
        :mod:`copage.core.recall_text`).
        """
        return recall_tool.recall(self, page, query=query)

    def _index(self, pid: PageId) -> int:
        idx = parse_page_arg(pid)
        if idx is None or idx >= len(self.pages):
            raise KeyError(f"unknown page {pid!r}")
        return idx

    def _page_tokens(self, pid: PageId) -> int:
        return self.pages[self._index(pid)].tokens

    # ---------------------------------------------------------------- context
    def _preamble(self) -> str:
        return prompt.preamble(self.config.tool_name, by_query=self.config.recall_by_query,
                               example=self._example)

    def tools(self) -> list[dict[str, Any]]:
        """The recall tool schema (OpenAI format)."""
        return [prompt.recall_tool(self.config.tool_name, by_query=self.config.recall_by_query)]

    def bookmark_index(self) -> str:
        """The bookmark lines of evicted pages, re-joined only when they change.

        With the grouped index, the groups' lines come first, then the lines of
        evicted pages after the last group (:mod:`copage.core.grouped_index`)."""
        return self.grouped.text(self.books, len(self.pages), self._evicted_set)

    def index_entries(self) -> list[tuple[str, tuple[int, ...]]]:
        """Each line of the bookmark index and the evicted pages (indexes) it stands for:
        a group's line stands for its evicted pages (maybe none), a page's for itself."""
        return self.grouped.entries(self.books, self._evicted_set)

    @property
    def groups(self) -> list[Group]:
        """The grouped index's groups: folded page ranges, oldest first."""
        return self.grouped.groups

    @property
    def grouped_end(self) -> int:
        """Pages before this index are inside a group (0 without groups)."""
        return self.grouped.end

    def index_tokens(self) -> int:
        """Tokens of the bookmark index as shown: its bookmark lines (with groups, the
        groups' lines, the lines after them and the longer header)."""
        return self.grouped.tokens(self._bookmark_tokens)

    def _maybe_regroup(self, *, force: bool = False) -> None:
        """Fold old pages into groups, in one batch, when the index exceeds its cap
        (see :mod:`copage.core.groups`)."""
        if self.config.index != "grouped" or (self.defer_bookmarks and not force):
            return
        if self.grouped.regroup(self.pages, self.books, self._evicted_set,
                                self._bookmark_tokens):
            self.changes.dirty = True
            self._event("regroup", None, {"groups": [g.name for g in self.groups]})

    def context(self, question: str | None = None, *, meter: bool = True) -> Context:
        """Messages for the model: system (preamble + bookmarks), resident pages, open page.

        Paging stays out of sight until it is needed: while no page is evicted, the
        conversation goes out as it is (the pinned system prompt, if any, and every
        turn), with no preamble, no bookmark list and no recall tool.

        The request is counted by the prompt meter (``stats().prompt_cache``) unless
        ``meter`` is false: a caller that sends something else (a prompt style, a
        speculative fill) meters what it sends with :meth:`meter_request`.
        (:mod:`copage.core.model_context`.)
        """
        return model_context.context(self, question, meter)

    def meter_request(self, messages: Sequence[Mapping[str, Any]],
                      tools: Sequence[Mapping[str, Any]], question: str | None = None,
                      *, follow_up: bool = False, system_prompt: str | None = None) -> None:
        """Count one request as sent (``stats().prompt_cache``): its repeated prefix and
        cost, beside full context's with ``question`` (None: the conversation's latest
        turn is the question). ``follow_up``: a later request of the turn (after a
        recall), which full context would not send (:meth:`PromptMeter.record`).
        ``system_prompt``: the caller's own system prompt, in ``messages`` before the
        conversation's (a LangChain agent's), which full context would send as well."""
        model_context.meter_request(self, messages, tools, question, follow_up=follow_up,
                                    system_prompt=system_prompt)

    def full_request_tokens(self) -> int:
        """Tokens of the whole conversation sent as it is (the pinned system prompt and
        every turn as a message, session headers included), as the prompt meter renders
        a request: what full context would send before the question."""
        return self.full_context.tokens(self.turns, self.system, self.prompt_meter)

    def prompt_tokens(self, question: str | None = None) -> int:
        """Content tokens of :meth:`context` (preamble, tool schema, bookmarks, resident
        pages, open page, question); per-message framing is not counted."""
        return model_context.prompt_tokens(self, question)

    def full_tokens(self, question: str | None = None) -> int:
        """Tokens of the whole conversation (turn texts) plus the question."""
        n = self._closed_tokens + sum(self._turn_tokens[self.paginator.start :])
        return n + (self.tokenizer.count(question) if question else 0)

    def stats(self, question: str | None = None) -> PagerStats:
        """Pages, resident set, event counts and token figures (for ``question``)."""
        return model_context.stats(self, question)

    # ------------------------------------------------------------ persistence
    def _event(self, kind: str, idx: int | None, detail: dict[str, Any] | None = None) -> None:
        self.changes.event(len(self.turns) - 1, kind, idx, detail)

    def note(self, kind: str, pid: PageId | None, detail: dict[str, Any] | None = None) -> None:
        """Record an event made outside the pager (e.g. ``speculative`` by the chat loop;
        one that showed pages, ``detail["paged_in"]``, counts as a fill)."""
        idx = None if pid is None else self._index(pid)
        self.changes.note(len(self.turns) - 1, kind, idx, detail, self.counters)

    def drain(self) -> ChangeSet:
        """Return and reset the changes made since the last drain.

        The state snapshot is included only when it changed: a turn that closes no
        page and touches no page leaves it as stored. It is bounded by the resident
        set and the index, not by the conversation: each page's own state (its access
        history and bookmark epoch, :meth:`page_state`) goes apart, in
        ``change.page_state``, for the pages that changed only.
        """
        return self.changes.drain(self.cache.history.touched, self.snapshot, self.page_state)

    def set_system(self, text: str | None) -> None:
        """Set the pinned system prompt (kept outside the pages)."""
        self.system = text
        self.changes.dirty = True

    def discard(self) -> None:
        """Forget pending changes (the caller will reload from its store)."""
        self.changes.discard(self.cache.history.touched)

    def page_state(self, idx: int) -> dict[str, Any]:
        """JSON-able state of page ``idx`` that the stored page and bookmark don't hold:
        its access history (``first``, ``last``, ``count``: cache clocks and accesses)
        and the corpus size its bookmark was made at (``epoch``)."""
        return snapshot.page_state(self, idx)

    def snapshot(self) -> dict[str, Any]:
        """JSON-able pager state that the stored turns, pages, bookmarks and per-page
        states (:meth:`page_state`) don't hold; its size does not grow with the pages.

        Conversations stored before per-page states (``page_rows`` absent) kept every
        page's history in ``cache`` and the bookmark epochs in ``epochs``;
        :meth:`restore` reads both forms (:mod:`copage.core.state_upgrade`)."""
        return snapshot.snapshot(self)

    def can_rewind(self, n_turns: int, n_pages: int, state: Mapping[str, Any]) -> bool:
        """Whether :meth:`rewind` to this cut is possible: the kept pages end within the
        first ``n_turns`` turns, where ``state`` (the snapshot stored then) opens its
        page. O(removed pages)."""
        return snapshot.can_rewind(self, n_turns, n_pages, state)

    def rewind(self, n_turns: int, n_pages: int, state: Mapping[str, Any],
               rows: Mapping[int, Mapping[str, Any]] | None = None) -> Pager:
        """This conversation as it was with only its first ``n_turns`` turns and
        ``n_pages`` pages, given the snapshot stored then (``state``): the taking back of
        the commit that added the rest, and ``rows``: the :meth:`page_state` stored then
        of the kept pages that commit rewrote. The bookmarks of the first ``n_pages``
        pages must not have changed since. Its counted turns, kept pages and corpus are reused (the
        later pages leave the corpus), so the cost does not grow with the turns; this
        pager must not be used afterwards. ``ValueError`` if the cut is not one.
        """
        if not self.can_rewind(n_turns, n_pages, state):
            raise ValueError(f"cannot rewind to {n_turns} turns and {n_pages} pages")
        snapshot.cut_back(self, n_turns, n_pages)
        back = dict(rows or {})
        pager = Pager.restore(self.config, self.turns, [], {}, dict(state), base=self,
                              page_state=back)
        # the requests sent since that snapshot were sent (and billed): the count goes on
        pager.prompt_meter = self.prompt_meter
        pager.changes.dirty = True
        # the taken-back commit rewrote these rows: the next commit writes them back
        pager.cache.history.touched.update(page_id(i) for i in back)
        return pager

    @classmethod
    def restore(
        cls, config: PagerConfig, turns: Sequence[Turn], pages: Sequence[PageRecord],
        bookmarks: dict[int, Bookmark], state: dict[str, Any], *, base: Pager | None = None,
        page_state: Mapping[int, Mapping[str, Any]] | None = None,
    ) -> Pager:
        """Rebuild a pager from stored rows so that it continues exactly where it was.

        ``page_state``: the stored :meth:`page_state` of every page (older conversations
        hold them inside ``state``). ``base``: this conversation's pager at an earlier
        version, reused so that the cost is that of what was added since; ``pages``,
        ``bookmarks`` and ``page_state`` then hold only what was written after it, and
        ``base`` must not be used afterwards. ``ValueError`` if the rows do not fit.
        (:func:`copage.core.snapshot.restore_into`; older stored forms:
        :mod:`copage.core.state_upgrade`.)
        """
        pager = cls(config)
        snapshot.restore_into(pager, turns, pages, bookmarks, state, base=base,
                              page_state=page_state)
        return pager
