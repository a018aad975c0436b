"""The pager: pages, the resident set, bookmarks and recall, as pure state.

:class:`Pager` does no I/O. Each operation records what changed in a
:class:`~copage.core.changes.ChangeSet` that the caller drains and
persists (see :class:`copage.memory.PagedMemory`). Per-turn cost is bounded by the
size of the open page and the resident set, not by the conversation length:
pages are built once when they close, token sums are kept incrementally, the
bookmark index is re-joined only when it changes, and keyword extractors whose
keywords change as the corpus grows (their ``refresh_with_corpus``) refresh at most
``refresh_per_page`` stale bookmarks each time a page closes (a bookmark is stale
once the conversation has 25% more pages than when it was made), so the bookmark
index changes only when pages close.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any

from copage.core import prompt
from copage.core.bookmarks import get_format, keyword_text, make_bookmark
from copage.core.boundaries import get_boundary
from copage.core.cache import PageCache
from copage.core.changes import ChangeSet, Event, PageRecord
from copage.core.config import PagerConfig
from copage.core.groups import (
    REFILL,
    Group,
    fold_unit,
    group_name,
    group_page,
    merge_pair,
    parse_range,
)
from copage.core.keywords import Corpus, get_extractor, refreshes_with_corpus, uses_corpus
from copage.core.keywords.calls import call_labels
from copage.core.paginate import Paginator, ReplayPaginator, Span
from copage.core.passages import PassageIndex
from copage.core.policies import EvictionPolicy, get_policy
from copage.core.promptcache import PromptMeter, Savings, savings
from copage.core.retrieval import BM25Index, bm25_scores
from copage.core.text import content_words, index_terms, query_terms
from copage.core.tokens import get_tokenizer
from copage.core.types import (
    Bookmark,
    Page,
    PageId,
    Turn,
    page_id,
    page_index,
    parse_page_arg,
    render_turns,
)

_NOT_DEMAND = frozenset({"recall", "speculative"})  # access kinds counted apart from hits/faults


@dataclass(frozen=True, slots=True)
class RecallResult:
    """Outcome of one recall: ``status`` is ``paged_in``, ``resident`` or ``error``."""

    status: str
    text: str
    page: PageId | None = None


@dataclass(frozen=True, slots=True)
class EvictedMatch:
    """The best evicted page for a text: its index (None if nothing matches), its BM25
    score, and the query terms (the text's distinct content words, sorted)."""

    index: int | None
    score: float
    terms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Context:
    """What to send to the model: chat messages, tools, and the accounting."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    stats: PagerStats


@dataclass(slots=True)
class Counters:
    """Event counts kept across the conversation (stored in the pager's snapshot).

    A use through :meth:`Pager.access` (a probe, or a caller's own use) is a *hit*
    or a *fault* (the page was evicted and is paged in). Recall and speculative
    page-ins are counted apart: they are not demand misses. A *fill* (the default
    ``speculative`` mode's evicted pages shown for one turn, made resident by nothing)
    is no page-in: ``fills`` counts the turns that had one, ``fill_pages`` the pages
    they showed.
    """

    faults: int = 0
    hits: int = 0
    recalls: int = 0
    recall_page_ins: int = 0
    recall_errors: int = 0
    speculative_page_ins: int = 0
    evictions: int = 0
    fills: int = 0
    fill_pages: int = 0

    def to_json(self) -> dict[str, int]:
        """JSON-able form (the snapshot's ``counters``)."""
        return {f: int(getattr(self, f)) for f in self.__slots__}

    @classmethod
    def from_json(cls, data: object) -> Counters:
        """Inverse of :meth:`to_json`; also reads the older list form
        ``[faults, hits, recalls, recall_errors, evictions]`` (whose faults included
        recall and speculative page-ins, which cannot be told apart afterwards)."""
        if isinstance(data, list):
            f, h, r, e, ev = (int(x) for x in (list(data) + [0] * 5)[:5])
            return cls(faults=f, hits=h, recalls=r, recall_errors=e, evictions=ev)
        if not isinstance(data, dict):
            return cls()
        return cls(**{k: int(v) for k, v in data.items() if k in cls.__slots__})


@dataclass(frozen=True, slots=True)
class PagerStats:
    """A conversation's paging figures at one moment (see :meth:`Pager.stats`).

    Attributes:
        turns: turns added (the pinned system prompt is not a turn).
        pages: closed pages.
        open_turns: turns of the open page (always in context).
        resident: resident closed pages, in page order.
        evicted: number of evicted pages (their bookmarks are in the prompt).
        faults: uses through ``access()`` (probes) that found the page evicted.
        hits: uses through ``access()`` that found the page resident.
        recalls: recall tool calls, whatever their outcome.
        recall_page_ins: recalls that paged an evicted page in.
        recall_errors: recalls answered with an error (bad or unknown page, ...).
        speculative_page_ins: pages paged in before the model call by speculation.
        evictions: pages evicted so far.
        bookmark_tokens: tokens of the bookmarks of the evicted pages.
        prompt_tokens: content tokens of :meth:`Pager.context` for ``question``
            (``PagedMemory.stats()`` without a question, once a request was sent: that
            request as it was sent, the fill included).
        full_tokens: tokens of the whole conversation's turns plus ``question``.
        tokenizer: the tokenizer that counted them.
        keyword_generator: with a model-backed keyword generator, its ``calls``,
            ``failed_calls`` and ``fallback_pages`` (pages given offline keywords);
            None otherwise.
        fills: turns whose prompt showed evicted pages in a fill (the ``speculative``
            mode's; the pages stay evicted, so this is no page-in).
        fill_pages: pages those fills showed, counted once per turn.
        prompt_cache: the requests (``context()`` calls) seen since this pager was
            made or opened: ``requests``, ``prefix_share_median`` and
            ``prefix_share_last`` (share of a request's prompt tokens that repeat the
            previous request's prefix), token sums, and ``cost_usd`` per priced model
            (``paged``, ``paged_cached``, ``full``, ``full_cached``), and
            ``last_prompt_tokens`` (the latest request); see :mod:`copage.core.promptcache`.
            :attr:`savings` reads whether paging has saved money from it.
    """

    turns: int
    pages: int
    open_turns: int
    resident: tuple[PageId, ...]
    evicted: int
    faults: int
    hits: int
    recalls: int
    recall_page_ins: int
    recall_errors: int
    speculative_page_ins: int
    evictions: int
    bookmark_tokens: int
    prompt_tokens: int
    full_tokens: int
    tokenizer: str
    keyword_generator: Mapping[str, int] | None = None
    prompt_cache: Mapping[str, Any] | None = None
    fills: int = 0
    fill_pages: int = 0

    @property
    def page_ins(self) -> int:
        """Every page-in, whatever caused it (faults, recalls, speculation)."""
        return self.faults + self.recall_page_ins + self.speculative_page_ins

    @property
    def savings(self) -> dict[str, Savings]:
        """Per priced model, whether paging has saved money so far: the requests'
        cost as sent against sending the whole conversation each time, caching priced
        (:class:`~copage.core.promptcache.Savings`; empty before any request)."""
        return savings(self.prompt_cache)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (``resident`` as a list; ``page_ins`` included)."""
        d = {f: getattr(self, f) for f in self.__slots__}
        d["resident"] = list(self.resident)
        d["page_ins"] = self.page_ins
        if self.keyword_generator is None:
            del d["keyword_generator"]
        else:
            d["keyword_generator"] = dict(self.keyword_generator)
        if self.prompt_cache is None:
            del d["prompt_cache"]
        else:
            d["prompt_cache"] = dict(self.prompt_cache)
        d["savings"] = {m: s.to_dict() for m, s in self.savings.items()}
        return d


@dataclass(slots=True)
class _Book:
    """Bookmark bookkeeping: the bookmark and the corpus size it was made at."""

    bookmark: Bookmark
    epoch: int
    lowered: tuple[str, ...] = field(default_factory=tuple)


class Pager:
    """Pages a conversation. See the module docstring.

    Args:
        config: the settings.
        future: the whole future access sequence, needed only by ``belady``.
        defer_bookmarks: make bookmarks only in :meth:`refresh_all_bookmarks`
            (simulation with probes at the end).
        spans: page cuts computed before by :func:`copage.core.paginate.paginate`
            for this conversation (simulation: cut once, replay in every cell).
    """

    def __init__(
        self, config: PagerConfig | None = None, *, future: Sequence[PageId] | None = None,
        defer_bookmarks: bool = False, spans: Sequence[Span] | None = None,
    ) -> None:
        self.config = cfg = config or PagerConfig()
        self.defer_bookmarks = defer_bookmarks
        self.tokenizer = get_tokenizer(cfg.tokenizer)
        self.boundary = get_boundary(cfg.boundary, **dict(cfg.boundary_options))
        self.extractor = get_extractor(cfg.keywords, **dict(cfg.keyword_options))
        self.format = get_format(cfg.bookmark_format)
        # The preamble's and the group note's example bookmarks, in this format
        # (``[p3:keyword, keyword]`` for ``minimal`` and the richer formats, as before).
        shown = keyword_text(self.format)
        self._example = shown(Page("p3", 2, (), "", 0), prompt.EXAMPLE_KEYWORDS)
        self._example_range = shown(Page("p1-p8", 0, (), "", 0), ("keyword",))
        self._uses_corpus = uses_corpus(self.extractor)
        self._refreshes = refreshes_with_corpus(self.extractor)
        options = dict(cfg.policy_options)
        if future is not None:
            options["future"] = list(future)
        self.cache = PageCache(
            get_policy(cfg.policy, **options), cfg.resident_pages,
            token_budget=cfg.token_limit, size_of=self._page_tokens, batch=cfg.evict_batch,
            floor=cfg.budget_floor,
        )
        self.paginator = (
            Paginator(self.boundary) if spans is None else ReplayPaginator(self.boundary, spans)
        )
        self.turns: list[Turn] = []
        self.pages: list[Page] = []
        self.corpus = Corpus()
        self.books: dict[int, _Book] = {}
        self.taken: dict[str, int] = {}
        self.system: str | None = None
        self.counters = Counters()
        self._turn_tokens: list[int] = []
        self._closed_tokens = 0
        self._evicted_set: set[int] = set()
        self._evicted_index: BM25Index[int] | None = None  # built on first search
        self._passages: PassageIndex | None = None  # built on first fill (derived state)
        self._stale_heap: list[tuple[int, int]] = []  # (epoch, page index), lazily cleaned
        self._refresh_owed = 0  # stale-bookmark refreshes due (refresh_per_page per close)
        self._resident_tokens = 0  # tokens of resident closed pages
        self._bookmark_tokens = 0  # tokens of the bookmarks of evicted pages
        self._tail_tokens = 0  # ... of those after the last group (shown as their own lines)
        self._index_lines: str | None = None
        self.groups: list[Group] = []  # grouped index: folded page ranges, oldest first
        self._group_tokens = 0  # their lines' tokens plus the grouped header's
        self._pending = ChangeSet()
        self._state_dirty = True  # the first drain stores a snapshot
        self._epochs_changed: set[int] = set()  # pages whose bookmark epoch changed
        self._event_seq = 0
        # Pages paged in (or recalled) since the turn began: a later page-in of the same
        # turn evicts them only when nothing else can go, so a speculative page-in is not
        # undone by the recall that follows it. ``_pins_user`` is the user turn they
        # belong to (-1: none), so a restored pager drops pins of an earlier turn.
        self._pins: list[PageId] = []
        self._pins_user = -1
        self.prompt_meter = PromptMeter(self.tokenizer)  # stored in the snapshot
        # full context as the meter renders it: each turn's message (session header
        # included), counted when first metered; cut back by pop_turn and rewind
        self._full_parts: list[int] = []
        tools = self.tools()
        self._fixed_tokens = self.tokenizer.count(self._preamble()) + self.tokenizer.count(
            prompt.tool_tokens_text(tools)
        )

    # ----------------------------------------------------------- conversation
    def add(self, turn: Turn) -> list[PageId]:
        """Append a turn; return the ids of pages that closed."""
        seq = len(self.turns)
        tokens = self.tokenizer.count(prompt.turn_content(turn))  # may raise: nothing changed yet
        self.turns.append(turn)
        self._turn_tokens.append(tokens)
        self._pending.turns.append((seq, turn))
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
                self._refresh_stale()
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
        del self._full_parts[seq:]
        pending = self._pending
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
            self._state_dirty = True
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
            self.books[idx] = _Book(Bookmark(page.id, (), "", 0, self.format.name), 0)
            self._epochs_changed.add(idx)
        else:
            if self._uses_corpus:
                self.corpus.add(page.id, text)
            self._set_bookmark(idx, self._keywords(page))
        self._pending.pages.append(PageRecord(idx, span.start, span.end - 1, page.tokens))
        self._event("admit", idx)
        self._resident_tokens += page.tokens
        for victim in self.cache.admit(page.id):
            self._evicted(victim)
        self._index_lines = None
        return page.id

    @property
    def open_turns(self) -> Sequence[Turn]:
        """Turns of the open page (always resident)."""
        return self.turns[self.paginator.start :]

    # -------------------------------------------------------------- bookmarks
    def _keywords(self, page: Page) -> tuple[str, ...]:
        # Other pages' use of each term: the page's own current keywords are taken out
        # for the call and put back after (no O(pages) copy of ``taken``).
        own = self.books.get(page.index)
        lowered = own.lowered if own else ()
        for k in lowered:
            self.taken[k] -= 1
        try:
            return call_labels(page.turns) + tuple(
                self.extractor.extract(page, self.corpus, self.config.n_keywords,
                                       taken=self.taken))
        finally:
            for k in lowered:
                self.taken[k] += 1

    def _set_bookmark(self, idx: int, keywords: tuple[str, ...]) -> None:
        old = self.books.get(idx)
        if old:
            for k in old.lowered:
                self.taken[k] -= 1
        bm = make_bookmark(self.pages[idx], keywords, self.format, self.tokenizer,
                           self.config.bookmark_tokens)
        lowered = tuple(k.lower() for k in bm.keywords)
        for k in lowered:
            self.taken[k] = self.taken.get(k, 0) + 1
        self.books[idx] = _Book(bm, len(self.pages), lowered)
        self._epochs_changed.add(idx)
        if idx in self._evicted_set:
            delta = bm.tokens - (old.bookmark.tokens if old else 0)
            self._bookmark_tokens += delta
            if idx >= self.grouped_end:
                self._tail_tokens += delta
            heapq.heappush(self._stale_heap, (len(self.pages), idx))
        self._pending.bookmarks.append((idx, bm))
        self._index_lines = None

    def _refresh_stale(self) -> None:
        if not self._refreshes or not self.pages:
            return
        n = len(self.pages)
        budget, self._refresh_owed = self._refresh_owed, 0  # per close since the last refresh
        heap = self._stale_heap
        # Oldest bookmarks first; only evicted pages show bookmarks.
        while heap and budget > 0 and n >= heap[0][0] * 1.25 + 1:
            epoch, idx = heapq.heappop(heap)
            if idx < self.grouped_end:  # its line is its group's: not shown, not refreshed
                continue
            if idx in self._evicted_set and self.books[idx].epoch == epoch:
                self._set_bookmark(idx, self._keywords(self.pages[idx]))
                budget -= 1

    def refresh_all_bookmarks(self, keywords: dict[PageId, tuple[str, ...]] | None = None) -> None:
        """Recompute every bookmark with the whole conversation known (batch extraction).

        ``keywords`` may supply the batch result (the simulation reuses it across cells).
        """
        if not self.pages:
            return
        kws = keywords if keywords is not None else self.batch_keywords()
        self.taken.clear()
        self.books.clear()
        self._bookmark_tokens = self._tail_tokens = 0
        for page in self.pages:
            self._set_bookmark(page.index, kws[page.id])
        if self.groups:  # the groups' keywords too, with the whole conversation known
            self._set_groups([self._make_group(g.start, g.end) for g in self.groups])
        self._maybe_regroup(force=True)

    def batch_keywords(self) -> dict[PageId, tuple[str, ...]]:
        """Keywords of every page by the extractor's batch mode (whole conversation)."""
        found = self.extractor.extract_all(self.pages, self.config.n_keywords)
        return {p.id: call_labels(p.turns) + tuple(found[p.id]) for p in self.pages}

    def bookmark(self, pid: PageId) -> Bookmark:
        """The current bookmark of a page."""
        return self.books[self._index(pid)].bookmark

    # ----------------------------------------------------------------- access
    @property
    def evicted_index(self) -> BM25Index[int]:
        """BM25 over the evicted pages' full text (content words), keyed by page index
        (recall by query, speculative page-in); built on first use, then kept up to
        date on every eviction and page-in, so IDF covers exactly the evicted pages."""
        if self._evicted_index is None:
            index: BM25Index[int] = BM25Index()
            for idx in sorted(self._evicted_set):
                index.add(idx, index_terms(self.pages[idx].text))
            self._evicted_index = index
        return self._evicted_index

    @property
    def passages(self) -> PassageIndex:
        """BM25 over overlapping passages of the closed pages' turns
        (:class:`~copage.core.passages.PassageIndex`: the speculative fill's unit), built
        on first use and brought up to date with the closed pages on every use."""
        if self._passages is None:
            self._passages = PassageIndex()
        return self._passages.sync(self.pages)

    def search_evicted(self, text: str) -> EvictedMatch:
        """The evicted page whose text best matches ``text`` (BM25 with the distinct
        content words of ``text`` as the query; ties: the earliest page)."""
        terms = query_terms(text)
        best = self.evicted_index.best(terms) if terms else None
        if best is None or best.key is None:
            return EvictedMatch(None, 0.0, terms)
        return EvictedMatch(int(best.key), best.score, terms)

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
        if kind in _NOT_DEMAND:
            protect = {*protect, *self._pins}
        result = self.cache.access(pid, protect=protect)
        if kind in _NOT_DEMAND and pid not in self._pins:
            self._pins.append(pid)
            self._state_dirty = True
        counts = self.counters
        if result.hit:
            if kind not in _NOT_DEMAND:
                counts.hits += 1
            self._event("hit", idx, {"by": kind})
        else:
            if kind == "recall":
                counts.recall_page_ins += 1
            elif kind == "speculative":
                counts.speculative_page_ins += 1
            else:
                counts.faults += 1
            self._event("fault", idx, {"by": kind})
            self._evicted_set.discard(idx)
            if self._evicted_index is not None:
                self._evicted_index.remove(idx)
            self._resident_tokens += self.pages[idx].tokens
            self._bookmark_tokens -= self.books[idx].bookmark.tokens
            if idx >= self.grouped_end:
                self._tail_tokens -= self.books[idx].bookmark.tokens
        for victim in result.evicted:
            self._evicted(victim)
        self._index_lines = None
        return bool(result.hit)

    def _evicted(self, pid: PageId) -> None:
        idx = self._index(pid)
        self.counters.evictions += 1
        self._evicted_set.add(idx)
        if self._evicted_index is not None:
            self._evicted_index.add(idx, index_terms(self.pages[idx].text))
        self._resident_tokens -= self.pages[idx].tokens
        self._bookmark_tokens += self.books[idx].bookmark.tokens
        if idx >= self.grouped_end:
            self._tail_tokens += self.books[idx].bookmark.tokens
        heapq.heappush(self._stale_heap, (self.books[idx].epoch, idx))
        self._event("evict", idx)

    def recall(self, page: object = None, *, query: object = None) -> RecallResult:
        """The recall tool: page a page in and return its text. Never raises.

        Exactly one of ``page`` and ``query`` (when ``recall_by_query`` is on).
        Errors come back as ``status="error"`` with a text meant for the model.
        """
        self.counters.recalls += 1
        name = self.config.tool_name
        if query is not None and page is None:
            if not self.config.recall_by_query:
                return self._recall_error(f"{name}() takes a page id such as \"p3\", not a query.")
            return self._recall_query(query)
        if page is not None and query is not None:
            return self._recall_error(f"give exactly one of page or query to {name}().")
        span = parse_range(page)
        if span is not None:
            return self._recall_group(span)
        idx = parse_page_arg(page)
        if idx is None:
            return self._recall_error(
                f"{name}() needs a page id such as \"p3\"; got {str(page)[:40]!r}."
                + self._valid_pages()
            )
        if idx >= len(self.pages):
            return self._recall_error(f"there is no page p{idx + 1}." + self._valid_pages())
        pid = page_id(idx)
        if self.is_resident(pid):
            self.access(pid, kind="recall")
            self._event("recall", idx, {"status": "resident"})
            return RecallResult("resident", f"{pid} is already in context (its messages are shown above).", pid)
        self.access(pid, kind="recall")
        self._event("recall", idx, {"status": "paged_in"})
        return RecallResult("paged_in", prompt.page_block(pid, self.pages[idx].turns), pid)

    def _recall_group(self, span: tuple[int, int]) -> RecallResult:
        """Recall of a group's range: page in its evicted page best matching the latest
        user message (BM25 over the pages' text; ties and no match: the earliest)."""
        group = next((g for g in self.groups if (g.start, g.end) == span), None)
        if group is None:
            shown = ", ".join(g.name for g in self.groups) or "none"
            return self._recall_error(
                f"there is no group {group_name(*span)}; groups: {shown}." + self._valid_pages())
        members = [i for i in range(group.start, group.end) if i in self._evicted_set]
        if not members:
            self._event("recall", None, {"status": "resident", "group": group.name})
            return RecallResult("resident", f"every page of {group.name} is already in context.")
        question = next((t.text for t in reversed(self.turns) if t.role == "user"), "")
        scores = bm25_scores(index_terms(question),
                             [index_terms(self.pages[i].text) for i in members])
        best = members[max(range(len(members)), key=lambda j: (scores[j], -j))]
        pid = page_id(best)
        self.access(pid, kind="recall")
        self._event("recall", best, {"status": "paged_in", "group": group.name})
        text = f"From {group.name}, the page that best matches the question:\n"
        return RecallResult("paged_in", text + prompt.page_block(pid, self.pages[best].turns), pid)

    def _recall_query(self, query: object) -> RecallResult:
        if not isinstance(query, str) or not content_words(query):
            return self._recall_error("the query must be a few words describing what you need.")
        if not self._evicted_set:
            return self._recall_error("no page is evicted: everything is already in context.")
        best = self.search_evicted(query).index
        if best is None:
            return self._recall_error(f"no evicted page matches {query[:60]!r}.")
        pid = page_id(best)
        self.access(pid, kind="recall")
        self._event("recall", self._index(pid), {"status": "paged_in", "query": query[:200]})
        return RecallResult("paged_in", prompt.page_block(pid, self.pages[self._index(pid)].turns), pid)

    def _recall_error(self, text: str) -> RecallResult:
        self.counters.recall_errors += 1
        self._event("recall", None, {"status": "error", "message": text[:300]})
        return RecallResult("error", f"error: {text}")

    def _valid_pages(self) -> str:
        ev = self.evicted
        if not ev:
            return " No page is evicted."
        shown = ", ".join(ev[:20]) + (", ..." if len(ev) > 20 else "")
        return f" Evicted pages: {shown}."

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
        evicted pages after the last group."""
        if self._index_lines is None:
            # The groups' lines, then the evicted pages after them: bounded by the index
            # cap, not by the conversation (index_entries also lists each group's pages).
            lines = [g.bookmark.text for g in self.groups]
            lines += [self.books[i].bookmark.text for i in self._tail_evicted()]
            self._index_lines = prompt.bookmarks_block(
                lines, grouped=bool(self.groups), example_range=self._example_range,
                quoted=bool(getattr(self.format, "quotes", False)))
        return self._index_lines

    def _tail_evicted(self) -> list[int]:
        """Evicted pages after the last group, in page order."""
        end, ev = self.grouped_end, self._evicted_set
        if len(self.pages) - end > 2 * len(ev):  # few evicted pages (flat index: all pages)
            return sorted(i for i in ev if i >= end)
        return [i for i in range(end, len(self.pages)) if i in ev]

    def index_entries(self) -> list[tuple[str, tuple[int, ...]]]:
        """Each line of the bookmark index and the evicted pages (indexes) it stands for:
        a group's line stands for its evicted pages (maybe none), a page's for itself."""
        out: list[tuple[str, tuple[int, ...]]] = [
            (g.bookmark.text, tuple(i for i in range(g.start, g.end) if i in self._evicted_set))
            for g in self.groups]
        end = self.grouped_end
        out.extend((self.books[i].bookmark.text, (i,))
                   for i in sorted(self._evicted_set) if i >= end)
        return out

    @property
    def grouped_end(self) -> int:
        """Pages before this index are inside a group (0 without groups)."""
        return self.groups[-1].end if self.groups else 0

    def index_tokens(self) -> int:
        """Tokens of the bookmark index as shown: its bookmark lines (with groups, the
        groups' lines, the lines after them and the longer header)."""
        if not self.groups:
            return self._bookmark_tokens
        return self._group_tokens + self._tail_tokens

    def _set_groups(self, groups: list[Group]) -> None:
        self.groups = groups
        self._group_tokens = sum(g.bookmark.tokens for g in groups) + (
            self.tokenizer.count(prompt.group_note(self._example_range)) if groups else 0)
        self._tail_tokens = sum(self.books[i].bookmark.tokens for i in self._tail_evicted())
        self._index_lines = None

    def _make_group(self, start: int, end: int, halves: tuple[Group, Group] | None = None
                    ) -> Group:
        """A group of pages ``start..end-1``: its pages' bookmark keywords taken in turn,
        best first (each page's first, then each page's second, ...), or for a merge of
        two groups (``halves``) theirs. Made without reading the pages again: extracting
        over the range's text cost 67 ms a group, a spike of several groups on a regroup
        turn, and routed 1.2 points better (docs/keywords.md, fifth round)."""
        page = group_page(self.pages, start, end)
        n = self.config.n_keywords
        if halves is None:
            lists = [self.books[i].bookmark.keywords for i in range(start, end)]
        else:
            lists = [h.bookmark.keywords for h in halves]
        keywords = tuple(dict.fromkeys(k for rank in zip_longest(*lists) for k in rank
                                       if k is not None))[:n]
        return Group(start, end, make_bookmark(page, keywords, self.format, self.tokenizer,
                                               self.config.bookmark_tokens))

    def _maybe_regroup(self, *, force: bool = False) -> None:
        """Fold old pages into groups, in one batch, when the index exceeds its cap
        (see :mod:`copage.core.groups`)."""
        cfg = self.config
        if cfg.index != "grouped" or (self.defer_bookmarks and not force):
            return
        self._index_lines = None
        if self.index_tokens() <= cfg.index_tokens:
            return
        target = cfg.index_tokens * REFILL
        keep = cfg.resident_pages or 1
        while self.index_tokens() > target:
            start = self.grouped_end
            end = fold_unit(self.pages, start, len(self.pages) - keep, cfg.group_by,
                            cfg.group_pages)
            if end > start:
                self._set_groups([*self.groups, self._make_group(start, end)])
            else:
                i = merge_pair(self.groups)
                if i is None:
                    break
                a, b = self.groups[i], self.groups[i + 1]
                merged = self._make_group(a.start, b.end, (a, b))
                self._set_groups([*self.groups[:i], merged, *self.groups[i + 2:]])
        self._state_dirty = True
        self._event("regroup", None, {"groups": [g.name for g in self.groups]})

    def context(self, question: str | None = None, *, meter: bool = True) -> Context:
        """Messages for the model: system (preamble + bookmarks), resident pages, open page.

        Paging stays out of sight until it is needed: while no page is evicted, the
        conversation goes out as it is (the pinned system prompt, if any, and every
        turn), with no preamble, no bookmark list and no recall tool.

        The request is counted by the prompt meter (``stats().prompt_cache``) unless
        ``meter`` is false: a caller that sends something else (a prompt style, a
        speculative fill) meters what it sends with :meth:`meter_request`.
        """
        parts = [self.system] if self.system else []
        if self._evicted_set:
            parts.append(self._preamble() + "\n\n" + self.bookmark_index())
        messages: list[dict[str, Any]] = (
            [{"role": "system", "content": "\n\n".join(parts)}] if parts else [])
        turns = [t for pid in self.resident for t in self.pages[self._index(pid)].turns]
        turns.extend(self.open_turns)
        messages.extend(prompt.turn_messages(turns))
        if question is not None:
            messages.append({"role": "user", "content": question})
        tools = self.tools() if self._evicted_set else []
        if meter:
            self.meter_request(messages, tools, question)
        return Context(messages, tools, self.stats(question))

    def meter_request(self, messages: Sequence[Mapping[str, Any]],
                      tools: Sequence[Mapping[str, Any]], question: str | None = None,
                      *, follow_up: bool = False) -> None:
        """Count one request as sent (``stats().prompt_cache``): its repeated prefix and
        cost, beside full context's with ``question`` (None: the conversation's latest
        turn is the question). ``follow_up``: a later request of the turn (after a
        recall), which full context would not send (:meth:`PromptMeter.record`)."""
        if follow_up:
            self.prompt_meter.record(messages, tools, 0, 0, follow_up=True)
            self._state_dirty = True
            return
        asked = self.prompt_meter.part_tokens({"role": "user", "content": question}) if question else 0
        full = self.full_request_tokens()
        # full context's tokens after its cache breakpoint, the latest assistant turn (none:
        # no breakpoint, all of it), as the meter places a paged request's
        tail = full
        for i in range(len(self.turns) - 1, -1, -1):
            if self.turns[i].role == "assistant":
                tail = sum(self._full_parts[i + 1:])
                break
        self.prompt_meter.record(messages, tools, full + asked, asked, tail=tail)
        self._state_dirty = True  # the meter is in the snapshot

    def full_request_tokens(self) -> int:
        """Tokens of the whole conversation sent as it is (the pinned system prompt and
        every turn as a message, session headers included), as the prompt meter renders
        a request: what full context would send before the question."""
        done = len(self._full_parts)
        if done < len(self.turns):
            before = self.turns[done - 1:done]  # the previous turn decides the header
            messages = prompt.turn_messages([*before, *self.turns[done:]])[len(before):]
            self._full_parts.extend(self.prompt_meter.part_tokens(m) for m in messages)
        system = (self.prompt_meter.part_tokens({"role": "system", "content": self.system})
                  if self.system else 0)
        return system + sum(self._full_parts)

    def prompt_tokens(self, question: str | None = None) -> int:
        """Content tokens of :meth:`context` (preamble, tool schema, bookmarks, resident
        pages, open page, question); per-message framing is not counted."""
        n = (self._fixed_tokens if self._evicted_set else 0) + self.tokenizer.count(self.system or "")
        n += self._resident_tokens + self.index_tokens()
        n += sum(self._turn_tokens[self.paginator.start :])
        if question:
            n += self.tokenizer.count(question)
        return n

    def full_tokens(self, question: str | None = None) -> int:
        """Tokens of the whole conversation (turn texts) plus the question."""
        n = self._closed_tokens + sum(self._turn_tokens[self.paginator.start :])
        return n + (self.tokenizer.count(question) if question else 0)

    def stats(self, question: str | None = None) -> PagerStats:
        """Pages, resident set, event counts and token figures (for ``question``)."""
        c = self.counters
        return PagerStats(
            turns=len(self.turns), pages=len(self.pages), open_turns=len(self.open_turns),
            resident=tuple(self.resident), evicted=len(self._evicted_set),
            faults=c.faults, hits=c.hits, recalls=c.recalls, recall_page_ins=c.recall_page_ins,
            recall_errors=c.recall_errors, speculative_page_ins=c.speculative_page_ins,
            evictions=c.evictions, bookmark_tokens=self.index_tokens(),
            prompt_tokens=self.prompt_tokens(question), full_tokens=self.full_tokens(question),
            tokenizer=self.tokenizer.name, prompt_cache=self.prompt_meter.summary(),
            fills=c.fills, fill_pages=c.fill_pages,
        )

    # ------------------------------------------------------------ persistence
    def _event(self, kind: str, idx: int | None, detail: dict[str, Any] | None = None) -> None:
        self._event_seq += 1
        self._pending.events.append(
            Event(self._event_seq, len(self.turns) - 1, kind, idx, detail or {})
        )

    def note(self, kind: str, pid: PageId | None, detail: dict[str, Any] | None = None) -> None:
        """Record an event made outside the pager (e.g. ``speculative`` by the chat loop;
        one that showed pages, ``detail["paged_in"]``, counts as a fill)."""
        self._event(kind, None if pid is None else self._index(pid), detail)
        shown = (detail or {}).get("paged_in") if kind == "speculative" else None
        if shown:
            self.counters.fills += 1
            self.counters.fill_pages += len(shown)
            self._state_dirty = True

    def drain(self) -> ChangeSet:
        """Return and reset the changes made since the last drain.

        The state snapshot is included only when it changed: a turn that closes no
        page and touches no page leaves it as stored. It is bounded by the resident
        set and the index, not by the conversation: each page's own state (its access
        history and bookmark epoch, :meth:`page_state`) goes apart, in
        ``change.page_state``, for the pages that changed only.
        """
        change, self._pending = self._pending, ChangeSet()
        touched = self.cache.history.touched
        changed = self._epochs_changed | {page_index(p) for p in touched}
        if change.pages or change.events or change.bookmarks or self._state_dirty or changed:
            change.state = self.snapshot()
            change.page_state = [(i, self.page_state(i)) for i in sorted(changed)]
            self._state_dirty = False
        touched.clear()
        self._epochs_changed = set()
        return change

    def set_system(self, text: str | None) -> None:
        """Set the pinned system prompt (kept outside the pages)."""
        self.system = text
        self._state_dirty = True

    def discard(self) -> None:
        """Forget pending changes (the caller will reload from its store)."""
        self._pending = ChangeSet()
        self._epochs_changed = set()
        self.cache.history.touched.clear()

    def page_state(self, idx: int) -> dict[str, Any]:
        """JSON-able state of page ``idx`` that the stored page and bookmark don't hold:
        its access history (``first``, ``last``, ``count``: cache clocks and accesses)
        and the corpus size its bookmark was made at (``epoch``)."""
        first, last, count = self.cache.history.page(page_id(idx))
        return {"epoch": self.books[idx].epoch, "first": first, "last": last, "count": count}

    def snapshot(self) -> dict[str, Any]:
        """JSON-able pager state that the stored turns, pages, bookmarks and per-page
        states (:meth:`page_state`) don't hold; its size does not grow with the pages.

        Conversations stored before per-page states (``page_rows`` absent) kept every
        page's history in ``cache`` and the bookmark epochs in ``epochs``;
        :meth:`restore` reads both forms."""
        cache = self.cache.snapshot(pages=False)
        policy_state = cache.get("policy_state")
        if isinstance(policy_state, dict):
            # The query policy's page texts are the pages' own text: restore() sets
            # them again, so the snapshot does not carry the conversation twice.
            policy_state.pop("texts", None)
        return {
            "open_start": self.paginator.start,
            "cache": cache,
            "counters": self.counters.to_json(),
            "event_seq": self._event_seq,
            "page_rows": 1,
            "system": self.system,
            "pins": {"user": self._pins_user, "pages": list(self._pins)},
            "groups": [[g.start, g.end, list(g.bookmark.keywords)] for g in self.groups],
            "refresh_owed": self._refresh_owed,
            "prompt_meter": self.prompt_meter.to_json(),
        }

    def can_rewind(self, n_turns: int, n_pages: int, state: Mapping[str, Any]) -> bool:
        """Whether :meth:`rewind` to this cut is possible: the kept pages end within the
        first ``n_turns`` turns, where ``state`` (the snapshot stored then) opens its
        page. O(removed pages)."""
        if not (0 <= n_pages <= len(self.pages) and 0 <= n_turns <= len(self.turns)):
            return False
        # the closed pages tile the turns before the open page
        kept = self.paginator.start - sum(len(p.turns) for p in self.pages[n_pages:])
        return kept <= n_turns and state.get("open_start", 0) == kept

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
        gone = self.pages[n_pages:]
        paged = self.paginator.start
        kept = paged - sum(len(p.turns) for p in gone)
        if self._uses_corpus:
            for page in reversed(gone):
                self.corpus.remove(page.id)
        self._closed_tokens -= sum(self._turn_tokens[kept:paged])
        resident = set(self.cache.resident)
        history = self.cache.history
        for page in gone:  # the removed pages leave the sums restore(base=) starts from
            if page.id in resident:
                self._resident_tokens -= page.tokens
            else:
                self._evicted_set.discard(page.index)
                if page.index in self.books:
                    self._bookmark_tokens -= self.books[page.index].bookmark.tokens
            book = self.books.pop(page.index, None)
            for k in book.lowered if book else ():
                self.taken[k] -= 1
            for table in (history.first, history.last, history.count):
                table.pop(page.id, None)
        self._stale_heap = [e for e in self._stale_heap if e[1] < n_pages]
        heapq.heapify(self._stale_heap)
        self.turns = self.turns[:n_turns]
        self._turn_tokens = self._turn_tokens[:n_turns]
        del self._full_parts[n_turns:]
        self.pages = self.pages[:n_pages]
        back = dict(rows or {})
        pager = Pager.restore(self.config, self.turns, [], {}, dict(state), base=self,
                              page_state=back)
        # the requests sent since that snapshot were sent (and billed): the count goes on
        pager.prompt_meter = self.prompt_meter
        pager._state_dirty = True
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

        ``page_state``: the stored :meth:`page_state` of every page. A conversation
        stored before they were kept apart has them inside ``state`` instead; its
        pager then writes them all, once, with its next change.

        ``base``: this conversation's pager at an earlier version (same config), whose
        turns are the first of ``turns`` and whose pages the first stored ones; ``pages``
        then holds only the pages after them. Its counted turns, pages and corpus are
        reused, so the cost is that of what was added since, and ``base`` must not be
        used afterwards. ``ValueError`` if ``pages`` do not follow ``base``'s.
        With ``base``, ``bookmarks`` and ``page_state`` need hold only those written
        after ``base``'s version (the others are ``base``'s); a page that has neither
        a stored state nor one in ``base`` is a ``ValueError``.
        """
        pager = cls(config)
        pager.turns = list(turns)
        start = 0
        if base is not None:
            if base.config != config or len(base.turns) > len(turns):
                raise ValueError("base is not an earlier state of this conversation")
            start = len(base.turns)
            pager._turn_tokens = list(base._turn_tokens)
            pager.pages = list(base.pages)
            pager._closed_tokens = base._closed_tokens
            pager.corpus = base.corpus
        pager._turn_tokens += [pager.tokenizer.count(prompt.turn_content(t))
                               for t in turns[start:]]
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
        rows = dict(page_state or {})
        legacy = "page_rows" not in state  # stored before per-page states were apart
        epochs = ({int(i): int(e) for i, e in state.get("epochs", {}).items()} if legacy
                  else {i: int(r["epoch"]) for i, r in rows.items()})
        if base is not None:  # its bookmarks, then those written since (an epoch changes
            pager.books, pager.taken = dict(base.books), dict(base.taken)  # with its bookmark)
        for idx, bm in bookmarks.items():
            old = pager.books.get(idx)
            for k in old.lowered if old else ():
                pager.taken[k] -= 1
            lowered = tuple(k.lower() for k in bm.keywords)
            for k in lowered:
                pager.taken[k] = pager.taken.get(k, 0) + 1
            pager.books[idx] = _Book(bm, epochs.get(idx, len(pager.pages)), lowered)
        pager.paginator.start = int(state.get("open_start", 0))
        if "cache" in state:
            policy = get_policy(config.policy, **dict(config.policy_options))
            pager.cache = PageCache.restore(policy, state["cache"], size_of=pager._page_tokens,
                                            batch=config.evict_batch, floor=config.budget_floor)
            history = pager.cache.history
            if not legacy:
                known = base.cache.history if base is not None else None
                if known is not None:
                    history.first, history.last = dict(known.first), dict(known.last)
                    history.count = dict(known.count)
                for idx, row in rows.items():
                    history.set_page(page_id(idx), int(row["first"]), int(row["last"]),
                                     int(row["count"]))
                # base's pages have their states (from base or the rows): check the rest
                checked = pager.pages[len(base.pages):] if base is not None else pager.pages
                missing = next((p.id for p in checked if p.id not in history.first), None)
                if missing is not None:
                    raise ValueError(f"no stored state for page {missing}")
        res = set(pager.cache.resident)
        if type(pager.cache.policy).set_page_text is not EvictionPolicy.set_page_text:
            for page in pager.pages:  # a policy that reads page texts (``query``)
                pager.cache.set_page_text(page.id, page.text)
        redo: Collection[int] = range(len(pager.pages))
        if base is not None:
            # base's sums, with only the pages whose residency or bookmark changed (and
            # the new pages) done again: catching up does not walk every page.
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
        groups = []
        # A group of ``base`` that is stored unchanged is reused: its line is made from
        # the text of all its pages, which would make catching up O(pages).
        same = {(g.start, g.end, g.bookmark.keywords): g for g in base.groups} if base else {}
        for start, end, keywords in state.get("groups") or ():
            kws = tuple(str(k) for k in keywords)
            group = same.get((int(start), int(end), kws))
            if group is None:
                gpage = group_page(pager.pages, int(start), int(end))
                group = Group(int(start), int(end), make_bookmark(
                    gpage, kws, pager.format, pager.tokenizer))
            groups.append(group)
        pager._set_groups(groups)
        pager._refresh_owed = int(state.get("refresh_owed", 0))
        try:
            pager.prompt_meter = PromptMeter.from_json(pager.tokenizer, state.get("prompt_meter"))
        except (ValueError, TypeError, AttributeError):  # a damaged count: a new one, the
            pass  # conversation itself loads (the meter only reports)
        pager.counters = Counters.from_json(state.get("counters", state.get("stats")))
        pager._event_seq = int(state.get("event_seq", 0))
        pager.system = state.get("system")
        pins = state.get("pins") or {}
        user_seq = next((i for i in range(len(pager.turns) - 1, -1, -1)
                         if pager.turns[i].role == "user"), -1)
        pager._pins_user = int(pins.get("user", -1))
        if pager._pins_user >= user_seq:  # pins of this turn (or of a probe after it)
            pager._pins = [str(p) for p in pins.get("pages", ()) if str(p) in res]
        else:
            pager._pins_user = user_seq
        # The latest user message is the query policy's query; it is not in the
        # snapshot (which is written only when pages change), so take it from the turns.
        last_user = next((t.text for t in reversed(pager.turns) if t.role == "user"), None)
        pager.cache.set_query(last_user)
        # An older snapshot: the next change writes every page's state, and the snapshot
        # without them (one O(pages) commit); from then on only changed pages.
        pager._state_dirty = legacy and bool(pager.pages)
        pager._epochs_changed = set(range(len(pager.pages))) if pager._state_dirty else set()
        pager.cache.history.touched.clear()
        return pager
