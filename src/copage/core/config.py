"""Pager settings: one frozen value, validated against the registries."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from copage.core.registry import Registry, UnknownNameError, check_options
from copage.core.tokens import TOKENIZERS

if TYPE_CHECKING:
    from copage.core.keywords import KeywordExtractor
    from copage.core.policies import EvictionPolicy

DEFAULT_BOUNDARY = "fixed_10"
DEFAULT_POLICY = "lru"
DEFAULT_RESIDENT_PAGES = 4
"""Closed pages kept resident when paging by page count (``resident_pages``, the paper's
setting; 4 with ``evict_batch`` 2 was the default until paging by budget, and 5 before
the prompt-cache measurement of docs/loop.md, "Caching")."""
DEFAULT_BUDGET_TOKENS = 48_000
"""The default paging (neither ``resident_pages`` nor ``resident_tokens`` given): nothing
is evicted while the resident closed pages hold at most this many tokens. Chosen by the
cost measurement of docs/paging-budget.md (``bench/bench_budget_cost.py``): with caching
priced at gpt-4o-mini, claude-haiku-4-5 and claude-sonnet-4-5 prices, copage's cumulative
cost stays at most full context's at every length from 10 to 10,000 LoCoMo turns, with
room for a whole fill on the turn of the first eviction batch (32,000 and 40,000 passed
the measurement without that room)."""
DEFAULT_BUDGET_FLOOR = 2_000
"""Past ``budget_tokens``, pages are evicted at once until the resident ones hold at
most this many tokens: the batch's request, written to the cache whole, must cost no
more than full context's cached one (docs/paging-budget.md)."""
DEFAULT_KEYWORDS = "askable"
DEFAULT_FORMAT = "compact"
"""``[p3: kw kw]`` (``minimal``, the paper's ``[p3:kw, kw]``, before the measurement of
docs/keywords-record.md, fifth round: a comma costs a token, so within the cap a compact
bookmark shows about twice the words)."""
DEFAULT_N_KEYWORDS = 12
"""Keywords the extractor offers; those that fit ``bookmark_tokens`` are shown."""
DEFAULT_BOOKMARK_TOKENS = 12
"""Each bookmark's token cap (keywords are taken in rank order while it fits)."""
MIN_BOOKMARK_TOKENS = 4
"""The smallest cap: a page id's frame and one word."""
DEFAULT_TOOL_NAME = "recall"
DEFAULT_INDEX = "grouped"
DEFAULT_INDEX_TOKENS = 512
DEFAULT_GROUP_PAGES = 8
DEFAULT_EVICT_BATCH = 2
#: Settings added after conversations were first stored, with the value that keeps such
#: a stored conversation paging exactly as before when it is reopened.
_STORED_BEFORE = {"index": "flat", "evict_batch": 1, "bookmark_tokens": None,
                  "budget_tokens": None, "budget_floor": None}
#: Not settings: where the policy and keyword names are looked up (never stored).
_REGISTRIES = ("policies", "extractors")


@dataclass(frozen=True, slots=True)
class PagerConfig:
    """How a conversation is paged.

    Every name is checked when the value is made: an unknown boundary, policy,
    keyword extractor, bookmark format or tokenizer raises
    :class:`~copage.core.registry.UnknownNameError` listing the valid names (a bad
    ``fixed_N``/``tokens_N`` or boundary option raises too). Policy, keyword and
    format options are checked when a :class:`~copage.core.pager.Pager` is built.

    Attributes:
        boundary: boundary strategy name (``fixed_N``, ``tokens_N``, ``session``,
            ``topic_shift``, ``segment``).
        policy: eviction policy name (``fifo``, ``lru``, ``lfu``, ``belady``, ``lrfu``,
            ``adaptive``, ``query``).
        resident_pages: how many closed pages stay resident (the open page is extra);
            the paper's setting (None, the default: page by ``budget_tokens``).
        resident_tokens: alternatively, a token budget for resident closed pages (just
            enough pages are evicted when a closing page passes it); it wins over
            ``resident_pages``.
        budget_tokens: the default paging, when neither ``resident_pages`` nor
            ``resident_tokens`` is given: nothing is evicted while the resident closed
            pages hold at most this many tokens, so a conversation that fits goes out
            unchanged (no bookmarks, no tool); when a closing page takes them past it,
            the policy's victims go at once until they hold at most ``budget_floor``
            tokens, so the prompt's prefix changes once per ``budget_tokens -
            budget_floor`` tokens of conversation (page-ins evict just enough).
        budget_floor: see ``budget_tokens`` (0 <= ``budget_floor`` < ``budget_tokens``;
            2,000 by default, half of ``budget_tokens`` when that is 2,000 or less).
        keywords: keyword extractor name (``askable``, the default; ``contrast``,
            ``discriminative``, ``tfidf``, ``heuristic``, ``random``, ``generic``).
        n_keywords: keywords the extractor offers per bookmark (all shown when
            ``bookmark_tokens`` is None; else those that fit, in rank order).
        bookmark_tokens: each bookmark's token cap (None or 0: no cap, ``n_keywords``
            keywords whatever they cost, as in the paper); for ``snippet``,
            ``structured`` and ``gist`` it caps their keyword list.
        bookmark_format: ``compact``, ``minimal``, ``snippet``, ``structured`` or ``gist``.
        tokenizer: offline tokenizer name (``o200k_base``, ``cl100k_base``, ``estimate-v1``).
        tool_name: name of the recall tool (``recall``; the proxy may rename it).
        recall_by_query: the recall tool also takes ``query`` (full-text search).
        refresh_per_page: at most this many stale bookmarks are recomputed each time
            a page closes (corpus-dependent extractors only).
        index: ``grouped`` (a bounded index: older pages folded into range groups,
            see :mod:`copage.core.groups`) or ``flat`` (one line per evicted page,
            the paper's index).
        index_tokens: the grouped index's token cap (at least 64).
        group_by: ``range`` (``group_pages`` pages per group) or ``session``.
        group_pages: pages per group when folding by range.
        evict_batch: when a closing page must evict, this many pages go at once
            (page-count limits only; capped at ``resident_pages``; page-ins still evict
            one), so the prompt's prefix changes once per batch; stale bookmarks are
            then refreshed on those turns only. 2 by default; 1 is the paper's.
        boundary_options, policy_options, keyword_options: extra factory options.
        policies, extractors: the registries ``policy`` and ``keywords`` are looked up in
            (None, the default: :data:`~copage.core.policies.POLICIES` and
            :data:`~copage.core.keywords.EXTRACTORS`); a run with names of its own passes
            ``POLICIES.extended({...})`` instead of registering them. Not settings: they
            are not stored (:meth:`to_dict`) nor compared.
    """

    boundary: str = DEFAULT_BOUNDARY
    policy: str = DEFAULT_POLICY
    resident_pages: int | None = None
    resident_tokens: int | None = None
    budget_tokens: int | None = DEFAULT_BUDGET_TOKENS
    budget_floor: int | None = DEFAULT_BUDGET_FLOOR
    keywords: str = DEFAULT_KEYWORDS
    n_keywords: int = DEFAULT_N_KEYWORDS
    bookmark_tokens: int | None = DEFAULT_BOOKMARK_TOKENS
    bookmark_format: str = DEFAULT_FORMAT
    tokenizer: str = "o200k_base"
    tool_name: str = DEFAULT_TOOL_NAME
    recall_by_query: bool = False
    refresh_per_page: int = 4
    index: str = DEFAULT_INDEX
    index_tokens: int = DEFAULT_INDEX_TOKENS
    group_by: str = "range"
    group_pages: int = DEFAULT_GROUP_PAGES
    evict_batch: int = DEFAULT_EVICT_BATCH
    boundary_options: Mapping[str, Any] = field(default_factory=dict)
    policy_options: Mapping[str, Any] = field(default_factory=dict)
    keyword_options: Mapping[str, Any] = field(default_factory=dict)
    policies: Registry[EvictionPolicy] | None = field(default=None, compare=False, repr=False)
    extractors: Registry[KeywordExtractor] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("resident_pages", "resident_tokens", "budget_tokens", "budget_floor",
                     "n_keywords", "refresh_per_page", "index_tokens", "group_pages",
                     "evict_batch"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        # One way of paging: resident_tokens, else resident_pages, else the budget; the
        # others are cleared, so that equal paging compares (and is stored) equal.
        if self.resident_tokens is not None:
            if self.resident_tokens < 1:
                raise ValueError(f"resident_tokens must be >= 1, got {self.resident_tokens}")
            object.__setattr__(self, "resident_pages", None)
        elif self.resident_pages is not None:
            if self.resident_pages < 1:
                raise ValueError(f"resident_pages must be >= 1, got {self.resident_pages}")
        else:
            if self.budget_tokens is None or self.budget_tokens < 1:
                raise ValueError("give resident_pages, resident_tokens or budget_tokens >= 1, "
                                 f"got budget_tokens={self.budget_tokens!r}")
            if (self.budget_floor == DEFAULT_BUDGET_FLOOR
                    and self.budget_tokens <= DEFAULT_BUDGET_FLOOR):
                # the default floor under a small budget (a small model's window): half
                object.__setattr__(self, "budget_floor", self.budget_tokens // 2)
            if self.budget_floor is None or not 0 <= self.budget_floor < self.budget_tokens:
                raise ValueError(f"budget_floor must be >= 0 and below budget_tokens "
                                 f"({self.budget_tokens}), got {self.budget_floor!r}")
        if self.resident_pages is not None or self.resident_tokens is not None:
            object.__setattr__(self, "budget_tokens", None)
            object.__setattr__(self, "budget_floor", None)
        if self.n_keywords < 1:
            raise ValueError(f"n_keywords must be >= 1, got {self.n_keywords}")
        if self.bookmark_tokens == 0 and not isinstance(self.bookmark_tokens, bool):
            object.__setattr__(self, "bookmark_tokens", None)
        if self.bookmark_tokens is not None and (
                not isinstance(self.bookmark_tokens, int) or isinstance(self.bookmark_tokens, bool)
                or self.bookmark_tokens < MIN_BOOKMARK_TOKENS):
            raise ValueError(f"bookmark_tokens must be None, 0 (no cap) or an integer >= "
                             f"{MIN_BOOKMARK_TOKENS}, got {self.bookmark_tokens!r}")
        if self.refresh_per_page < 0:
            raise ValueError(f"refresh_per_page must be >= 0, got {self.refresh_per_page}")
        from copage.core.groups import GROUP_BYS, INDEXES, MIN_INDEX_TOKENS

        if self.index not in INDEXES:
            raise UnknownNameError("index", self.index, INDEXES)
        if self.group_by not in GROUP_BYS:
            raise UnknownNameError("group_by", self.group_by, GROUP_BYS)
        if self.index_tokens < MIN_INDEX_TOKENS:
            raise ValueError(f"index_tokens must be >= {MIN_INDEX_TOKENS}, got {self.index_tokens}")
        if self.group_pages < 2:
            raise ValueError(f"group_pages must be >= 2, got {self.group_pages}")
        if self.evict_batch < 1:
            raise ValueError(f"evict_batch must be >= 1, got {self.evict_batch}")
        if self.resident_pages is not None and self.evict_batch >= self.resident_pages:
            # A batch leaves at least one closed page resident: cap it at k - 1 (k=1: 1).
            object.__setattr__(self, "evict_batch", max(1, self.resident_pages - 1))
        if not self.tool_name.isidentifier():
            raise ValueError(f"tool_name must be an identifier, got {self.tool_name!r}")
        self._check_names()

    def _check_names(self) -> None:
        """Every component name against its registry (UnknownNameError lists the valid ones)."""
        from copage.core.bookmarks import FORMATS
        from copage.core.boundaries import get_boundary

        for label, registry in (("policies", self.policies), ("extractors", self.extractors)):
            if registry is not None and not isinstance(registry, Registry):
                raise TypeError(f"{label} must be a Registry or None, got {registry!r}")
        for label, value in (("boundary", self.boundary), ("policy", self.policy),
                             ("keywords", self.keywords), ("bookmark_format", self.bookmark_format),
                             ("tokenizer", self.tokenizer)):
            if not isinstance(value, str):
                raise TypeError(f"{label} must be a name (str), got {value!r}")
        # Building the boundary also checks N of fixed_N / tokens_N and its options.
        get_boundary(self.boundary, **dict(self.boundary_options))
        self.policy_registry().check(self.policy)
        self.extractor_registry().check(self.keywords)
        FORMATS.check(self.bookmark_format)
        if self.tokenizer not in TOKENIZERS:
            raise UnknownNameError("tokenizer", self.tokenizer, TOKENIZERS)

    def policy_registry(self) -> Registry[EvictionPolicy]:
        """Where ``policy`` is looked up: ``policies``, else the global ``POLICIES``."""
        from copage.core.policies import POLICIES

        return POLICIES if self.policies is None else self.policies

    def extractor_registry(self) -> Registry[KeywordExtractor]:
        """Where ``keywords`` is looked up: ``extractors``, else the global ``EXTRACTORS``."""
        from copage.core.keywords import EXTRACTORS

        return EXTRACTORS if self.extractors is None else self.extractors

    def make_policy(self, **extra: object) -> EvictionPolicy:
        """The eviction policy ``policy`` with ``policy_options`` and ``extra`` (e.g.
        belady's ``future``, which wins over an option of the same name)."""
        return self.policy_registry().create(self.policy, **{**self.policy_options, **extra})

    def make_extractor(self) -> KeywordExtractor:
        """The keyword extractor ``keywords`` with ``keyword_options``."""
        return self.extractor_registry().create(self.keywords, **dict(self.keyword_options))

    @property
    def token_limit(self) -> int | None:
        """The resident closed pages' token limit (``resident_tokens`` or
        ``budget_tokens``; None when paging by page count)."""
        return self.resident_tokens if self.resident_tokens is not None else self.budget_tokens

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (stored with each conversation)."""
        d = {f.name: copy.deepcopy(getattr(self, f.name)) for f in fields(self)
             if f.name not in _REGISTRIES}
        for k in ("boundary_options", "policy_options", "keyword_options"):
            d[k] = dict(d[k])
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, like: PagerConfig | None = None) -> PagerConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error naming the valid ones.

        Settings stored before a field existed keep that field's former behaviour (the
        flat index, evictions one page at a time, paging by ``resident_pages`` or
        ``resident_tokens``), not today's default. Names are looked up in ``like``'s
        registries (default: the global ones)."""
        check_options("pager settings", data,
                      [f.name for f in fields(cls) if f.name not in _REGISTRIES])
        held = {} if like is None else {k: getattr(like, k) for k in _REGISTRIES}
        return cls(**{**_STORED_BEFORE, **dict(data), **held})
