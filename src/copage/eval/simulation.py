"""The LLM-free paging simulation (``copage simulate``).

Definitions (also in ``docs/simulation.md``):

* A probe is a QA item with at least one usable evidence id; the pages holding its
  evidence are the pages it *needs*. Probes are accesses: the cache state carries
  over from probe to probe; probe questions are not added to the conversation.
* ``placement="end"``: all turns first, the last partial page closed, then the
  probes, in ``order`` ``shuffled`` (seeded) or ``file``. ``placement="interleaved"``:
  each probe is asked at a seeded random point after its last evidence turn while
  the conversation keeps growing; evidence still in the open page is resident.
* A probe is a *hit* when all its needed pages are resident (the open page counts
  as resident); otherwise a *fault*: its missing pages are paged in, in page order,
  each evicting by the policy, preferring victims the probe does not need. Every
  needed page is accessed once per probe.
* ``routing_top1`` (faults only): BM25 with the question over the rendered
  bookmarks of the pages evicted at that moment ranks a needed page first (ties
  share the credit); ``routing_candidates_mean`` and ``routing_chance`` beside it.
* Token counts use one offline tokenizer (named in the output): bookmark tokens
  per rendered bookmark; prompt tokens after page-in (preamble, tool schema,
  bookmarks, resident pages, open page, question); full tokens = all turns + question.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from copage.core.boundaries import get_boundary
from copage.core.config import PagerConfig
from copage.core.keywords import KeywordExtractor
from copage.core.pager import Pager
from copage.core.paginate import Span, paginate
from copage.core.registry import Registry
from copage.core.tokens import get_tokenizer
from copage.core.types import PageId, page_id, page_index
from copage.eval.datasets.probes import Conversation, Dataset, Probe
from copage.eval.routing import bm25_candidates, route
from copage.eval.sim_pager import simulation_pager, with_future

PLACEMENTS = ("end", "interleaved")
ORDERS = ("shuffled", "file")


@dataclass(frozen=True, slots=True)
class Cell:
    """One configuration of the grid."""

    boundary: str
    policy: str
    k: int
    keywords: str
    format: str = "minimal"
    placement: str = "end"
    order: str = "shuffled"
    seed: int = 0
    index: str = "flat"  # the paper's flat index; "grouped" for the bounded one
    group_by: str = "range"
    group_recall: str = "best_page"  # a routed group gives its best page, or "bookmarks"
    evict_batch: int = 1  # the paper's one-at-a-time eviction
    n_keywords: int = 4  # the paper's four keywords per bookmark...
    bookmark_tokens: int | None = None  # ...whatever they cost (the library caps at 12)

    def config(self, extractors: Registry[KeywordExtractor] | None = None) -> PagerConfig:
        """The cell's pager settings; ``keywords`` is looked up in ``extractors`` (default:
        the global registry)."""
        options = {"seed": self.seed} if self.keywords == "random" else {}
        return PagerConfig(boundary=self.boundary, policy=self.policy, resident_pages=self.k,
                           keywords=self.keywords, bookmark_format=self.format,
                           keyword_options=options, index=self.index, group_by=self.group_by,
                           evict_batch=min(self.evict_batch, self.k),
                           n_keywords=self.n_keywords, bookmark_tokens=self.bookmark_tokens,
                           extractors=extractors)


@dataclass(frozen=True, slots=True)
class ProbeOutcome:
    """What happened at one probe."""

    probe_id: str
    needed: tuple[PageId, ...]
    hit: bool
    routing: float | None  # None on hits
    candidates: int
    chance: float | None
    prompt_tokens: int
    full_tokens: int
    routed_page: PageId | None = None


@dataclass(slots=True)
class ConversationRun:
    """One conversation under one cell."""

    conversation: str
    pages: int
    outcomes: list[ProbeOutcome] = field(default_factory=list)
    bookmark_tokens: list[int] = field(default_factory=list)


def schedule(conv: Conversation, spans: Sequence[Span], cell: Cell) -> list[tuple[int, Probe]]:
    """(turn index after which the probe is asked, probe), in asking order.

    With ``end`` placement the index is ``len(turns)`` (after the final close).
    """
    rng = random.Random(f"{cell.seed}:{conv.id}")
    probes = list(conv.probes)
    if cell.order == "shuffled":
        rng.shuffle(probes)
    n = len(conv.turns)
    if cell.placement == "end":
        return [(n, p) for p in probes]
    pos = conv.turn_index()
    timed = [(rng.randint(max(pos[e] for e in p.evidence), n - 1), i, p) for i, p in enumerate(probes)]
    timed.sort(key=lambda x: (x[0], x[1]))
    return [(t, p) for t, _, p in timed]


def _needed(probe: Probe, page_of: dict[str, int], closed: int) -> tuple[PageId, ...]:
    idx = sorted({page_of[e] for e in probe.evidence})
    return tuple(page_id(i) for i in idx if i < closed)


def _closed_by(spans: Sequence[Span], t: int, n: int) -> int:
    """How many pages are closed once turn ``t`` is added (``t == n``: all)."""
    if t >= n:
        return len(spans)
    return sum(1 for s in spans if s.closed_after != -1 and s.closed_after <= t)


def access_sequence(spans: Sequence[Span], plan: Sequence[tuple[int, Probe]],
                    page_of: dict[str, int], n: int) -> list[PageId]:
    """Every admit and probe access in order: the future that ``belady`` is given."""
    seq: list[PageId] = []
    admitted = 0
    for t, probe in plan:
        closed = _closed_by(spans, t, n)
        seq.extend(page_id(i) for i in range(admitted, closed))
        admitted = closed
        seq.extend(_needed(probe, page_of, closed))
    seq.extend(page_id(i) for i in range(admitted, len(spans)))
    return seq


_Memo = dict[tuple[Any, ...], Any]


def run_conversation(conv: Conversation, cell: Cell, memo: _Memo | None = None,
                     extractors: Registry[KeywordExtractor] | None = None) -> ConversationRun:
    """Simulate one conversation under one cell.

    ``memo`` shares work that does not depend on the policy (page cuts, batch
    keywords) between cells of one grid; ``extractors`` is where the cell's keywords
    are looked up (default: the global registry).
    """
    memo = {} if memo is None else memo
    skey = ("spans", conv.id, cell.boundary)
    if skey not in memo:
        memo[skey] = paginate(conv.turns, get_boundary(cell.boundary))
    spans = memo[skey]
    page_of = {conv.turns[j].id: i for i, s in enumerate(spans) for j in range(s.start, s.end)}
    plan = schedule(conv, spans, cell)
    n = len(conv.turns)
    config = cell.config(extractors)
    if cell.policy == "belady":
        config = with_future(config, access_sequence(spans, plan, page_of, n))
    end = cell.placement == "end"
    pager = simulation_pager(config, spans=spans, defer_bookmarks=end)
    run = ConversationRun(conv.id, len(spans))
    added = 0
    finished = False  # the conversation is over and its last page closed
    for t, probe in plan:
        while added < min(t + 1, n):
            pager.add(conv.turns[added])
            added += 1
        if t >= n and not finished:
            finished = True
            pager.close_open_page()
            if end:
                kkey = ("keywords", conv.id, cell.boundary, cell.keywords, cell.seed)
                if kkey not in memo:
                    memo[kkey] = pager.batch_keywords()
                pager.refresh_all_bookmarks(memo[kkey])
        run.outcomes.append(_probe(pager, probe, page_of, cell.group_recall))
    while added < n:
        pager.add(conv.turns[added])
        added += 1
    if not finished:
        pager.close_open_page()
        if end:
            pager.refresh_all_bookmarks()
    run.bookmark_tokens = [pager.bookmark(p.id).tokens for p in pager.pages]
    return run


def _route_grouped(pager: Pager, question: str, needed: Sequence[PageId],
                   group_recall: str) -> tuple[float, int, float, PageId | None]:
    """Routing over a grouped index: BM25 ranks its lines; a group line counts as
    right when the page it then gives is needed (``best_page``: BM25 of the question
    over its evicted pages' text; ``bookmarks``: over their bookmarks)."""
    entries = pager.index_entries()
    need = {page_index(p) for p in needed}
    picks: list[int | None] = []
    for i, (_, members) in enumerate(entries):
        if i >= len(pager.groups):
            picks.append(members[0])
        elif not members:
            picks.append(None)
        else:
            docs = [pager.pages[m].text if group_recall == "best_page"
                    else pager.books[m].bookmark.text for m in members]
            scores = bm25_candidates(question, docs)
            picks.append(members[max(range(len(members)), key=lambda j: (scores[j], -j))])
    want = {i for i, pick in enumerate(picks) if pick is not None and pick in need}
    r = route(question, [text for text, _ in entries], want)
    best = picks[r.best] if r.best >= 0 else None
    return r.credit, r.candidates, r.chance, page_id(best) if best is not None else None


def _probe(pager: Pager, probe: Probe, page_of: dict[str, int],
           group_recall: str = "best_page") -> ProbeOutcome:
    needed = _needed(probe, page_of, len(pager.pages))
    missing = [p for p in needed if not pager.is_resident(p)]
    routing: float | None = None
    chance: float | None = None
    candidates = 0
    routed: PageId | None = None
    if missing and pager.groups:
        routing, candidates, chance, routed = _route_grouped(
            pager, probe.question, needed, group_recall)
    elif missing:
        evicted = pager.evicted
        want = {i for i, p in enumerate(evicted) if p in needed}
        r = route(probe.question, [pager.bookmark(p).text for p in evicted], want)
        routing, candidates, chance = r.credit, r.candidates, r.chance
        routed = evicted[r.best] if r.best >= 0 else None
    pager.cache.set_query(probe.question)
    for p in needed:
        pager.access(p, protect=needed)
    return ProbeOutcome(
        probe.id, needed, not missing, routing, candidates, chance,
        pager.prompt_tokens(probe.question), pager.full_tokens(probe.question), routed,
    )


def _mean(xs: Iterable[float]) -> float | None:
    vals = list(xs)
    return sum(vals) / len(vals) if vals else None


def summarise(dataset: Dataset, cell: Cell, runs: Sequence[ConversationRun],
              belady_runs: Sequence[ConversationRun], tokenizer: str) -> dict[str, Any]:
    """One row of ``copage simulate --json``."""
    outs = [o for r in runs for o in r.outcomes]
    faults = [o for o in outs if not o.hit]
    bouts = [o for r in belady_runs for o in r.outcomes]
    return {
        "dataset": dataset.name, "boundary": cell.boundary, "policy": cell.policy, "k": cell.k,
        "keywords": cell.keywords, "format": cell.format, "placement": cell.placement,
        "order": cell.order, "seed": cell.seed,
        "conversations": len(runs), "probes": len(outs),
        "probes_skipped": dict(dataset.probes_skipped), "repairs": dict(dataset.repairs),
        "pages_mean": _mean(r.pages for r in runs),
        "hit_rate": _mean(1.0 if o.hit else 0.0 for o in outs),
        "belady_hit_rate": _mean(1.0 if o.hit else 0.0 for o in bouts),
        "faults": len(faults),
        "routing_top1": _mean(o.routing for o in faults if o.routing is not None),
        "routing_candidates_mean": _mean(o.candidates for o in faults),
        "routing_chance": _mean(o.chance for o in faults if o.chance is not None),
        "bookmark_tokens_mean": _mean(t for r in runs for t in r.bookmark_tokens),
        "prompt_tokens_mean": _mean(o.prompt_tokens for o in outs),
        "full_tokens_mean": _mean(o.full_tokens for o in outs),
        "tokenizer": tokenizer,
    }


def simulate(dataset: Dataset, cells: Sequence[Cell],
             extractors: Registry[KeywordExtractor] | None = None) -> list[dict[str, Any]]:
    """Run every cell on every conversation of ``dataset``; one summary row per cell
    (keywords looked up in ``extractors``, default: the global registry)."""
    rows: list[dict[str, Any]] = []
    belady_cache: dict[tuple[Any, ...], list[ConversationRun]] = {}
    memo: _Memo = {}
    for cell in cells:
        runs = [run_conversation(c, cell, memo, extractors) for c in dataset.conversations]
        key = (cell.boundary, cell.k, cell.placement, cell.order, cell.seed)
        if cell.policy == "belady":
            belady_cache.setdefault(key, runs)
        if key not in belady_cache:
            bcell = Cell(cell.boundary, "belady", cell.k, "heuristic", "minimal",
                         cell.placement, cell.order, cell.seed)
            belady_cache[key] = [run_conversation(c, bcell, memo) for c in dataset.conversations]
        tok = get_tokenizer(cell.config(extractors).tokenizer).name
        rows.append(summarise(dataset, cell, runs, belady_cache[key], tok))
    return rows
