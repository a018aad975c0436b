"""Pager settings: one frozen value, validated against the registries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

DEFAULT_BOUNDARY = "fixed_10"
DEFAULT_POLICY = "lru"
DEFAULT_RESIDENT_PAGES = 5
DEFAULT_KEYWORDS = "contrast"
DEFAULT_FORMAT = "minimal"
DEFAULT_TOOL_NAME = "recall"


@dataclass(frozen=True, slots=True)
class PagerConfig:
    """How a conversation is paged.

    Attributes:
        boundary: boundary strategy name (``fixed_N``, ``tokens_N``, ``session``,
            ``topic_shift``, ``segment``).
        policy: eviction policy name (``fifo``, ``lru``, ``lfu``, ``belady``, ``lrfu``,
            ``adaptive``, ``query``).
        resident_pages: how many closed pages stay resident (the open page is extra).
        resident_tokens: alternatively, a token budget for resident closed pages.
        keywords: keyword extractor name (``random``, ``heuristic``, ``tfidf``,
            ``discriminative``).
        n_keywords: keywords per bookmark.
        bookmark_format: ``minimal``, ``snippet``, ``structured`` or ``gist``.
        tokenizer: offline tokenizer name (``o200k_base``, ``cl100k_base``, ``estimate-v1``).
        tool_name: name of the recall tool (``recall``; the proxy may rename it).
        recall_by_query: the recall tool also takes ``query`` (full-text search).
        refresh_per_page: at most this many stale bookmarks are recomputed each time
            a page closes (corpus-dependent extractors only).
        boundary_options, policy_options, keyword_options: extra factory options.
    """

    boundary: str = DEFAULT_BOUNDARY
    policy: str = DEFAULT_POLICY
    resident_pages: int | None = DEFAULT_RESIDENT_PAGES
    resident_tokens: int | None = None
    keywords: str = DEFAULT_KEYWORDS
    n_keywords: int = 4
    bookmark_format: str = DEFAULT_FORMAT
    tokenizer: str = "o200k_base"
    tool_name: str = DEFAULT_TOOL_NAME
    recall_by_query: bool = False
    refresh_per_page: int = 4
    boundary_options: Mapping[str, Any] = field(default_factory=dict)
    policy_options: Mapping[str, Any] = field(default_factory=dict)
    keyword_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.resident_tokens is not None:
            if self.resident_tokens < 1:
                raise ValueError(f"resident_tokens must be >= 1, got {self.resident_tokens}")
            object.__setattr__(self, "resident_pages", None)
        elif self.resident_pages is None or self.resident_pages < 1:
            raise ValueError(f"resident_pages must be >= 1, got {self.resident_pages}")
        for name in ("resident_pages", "resident_tokens", "n_keywords", "refresh_per_page"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise ValueError(f"{name} must be an integer, got {value!r}")
        if self.n_keywords < 1:
            raise ValueError(f"n_keywords must be >= 1, got {self.n_keywords}")
        if self.refresh_per_page < 0:
            raise ValueError(f"refresh_per_page must be >= 0, got {self.refresh_per_page}")
        if not self.tool_name.isidentifier():
            raise ValueError(f"tool_name must be an identifier, got {self.tool_name!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (stored with each conversation)."""
        d = asdict(self)
        for k in ("boundary_options", "policy_options", "keyword_options"):
            d[k] = dict(d[k])
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PagerConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error naming the valid ones."""
        valid = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - valid)
        if unknown:
            raise ValueError(f"unknown pager setting(s) {unknown}; valid: {sorted(valid)}")
        return cls(**dict(data))
