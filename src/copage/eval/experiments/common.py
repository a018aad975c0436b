"""Shared pieces of the method experiments (``main``, ``judges``): settings, samples, models."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from copage.eval.datasets.probes import Conversation, Dataset, Probe
from copage.eval.experiments.interface import BenchContext, PagingSettings
from copage.eval.methods import MethodSettings
from copage.llm.model_types import ChatModel
from copage.llm.response_cache import CachedModel, ResponseCache

_DEFAULT = PagingSettings()
CONTROLLED_RESIDENT_PAGES = 2
"""Closed pages the bookmark methods keep resident on the ``controlled`` preset (the
paper's section 4: early pages compressed to bookmarks)."""
_SETTING_OPTIONS = ("budget", "full_window", "window", "top_k", "recall_reserve", "resident_pages",
                    "copage_policy",
                    "copage_boundary", "copage_keywords", "max_recalls", "max_tokens",
                    "speculative_threshold", "speculative_window", "speculative_relative",
                    "plan_recall",
                    "prompt_style")


def mean(xs: Iterable[float | None]) -> float | None:
    """Mean of the non-None values (None when there are none)."""
    vals = [x for x in xs if x is not None]
    return sum(vals) / len(vals) if vals else None


def has_sessions(dataset: Dataset) -> bool:
    """True when some conversation has more than one session (LoCoMo files)."""
    return any(len({t.session for t in c.turns}) > 1 for c in dataset.conversations)


def settings_for(dataset: Dataset, ctx: BenchContext) -> MethodSettings:
    """Method settings for one dataset (the same token budget for every method).

    Boundary (units and pages): ``ctx.options["boundary"]`` or a non-default
    ``--boundary``; else ``session`` on files with sessions; else ``fixed_5`` on
    the ``controlled`` preset (the paper's section 4: its 20-35 turns in a few
    pages, the bookmark methods keeping :data:`CONTROLLED_RESIDENT_PAGES` resident so
    that early pages are evicted to bookmarks); else ``fixed_10``. Budget: ``ctx.options["budget"]`` (default
    :data:`copage.eval.methods.DEFAULT_BUDGET`).
    """
    opts = ctx.options
    paging = ctx.paging
    override = opts.get("boundary") or (
        paging.boundary[0] if tuple(paging.boundary) != tuple(_DEFAULT.boundary) else None)
    if override:
        boundary = str(override)
    elif has_sessions(dataset):
        boundary = "session"
    elif dataset.name == "controlled":
        boundary = "fixed_5"
    else:
        boundary = "fixed_10"
    # The paper's controlled setting: early pages evicted to bookmarks, 2 pages resident
    # (its 20-35 turns fit any budget, so a budget alone would evict nothing).
    resident = CONTROLLED_RESIDENT_PAGES if dataset.name == "controlled" and not override else None
    policy = paging.policy[0] if tuple(paging.policy) != tuple(_DEFAULT.policy) else "lru"
    base = MethodSettings(
        boundary=boundary, policy=policy, resident_pages=resident,
        keywords=paging.keywords[0] if paging.keywords else "heuristic",
        format=paging.format[0] if paging.format else "minimal",
    )
    changes = {k: opts[k] for k in _SETTING_OPTIONS if k in opts}
    return replace(base, **changes) if changes else base


def sample_probes(dataset: Dataset, n: int | None, seed: int) -> list[tuple[Conversation, Probe]]:
    """All probes, or a seeded sample of ``n`` (kept in file order)."""
    pairs = [(c, p) for c in dataset.conversations for p in c.probes]
    if n is None or n >= len(pairs):
        return pairs
    if n < 1:
        raise ValueError(f"--probes must be >= 1, got {n}")
    rng = random.Random(f"{seed}:{dataset.name}")
    return [pairs[i] for i in sorted(rng.sample(range(len(pairs)), n))]


def parse_categories(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` -> ``(1, 2, 4)``, each checked (an unknown id fails listing the valid ones)."""
    from copage.eval.scoring import check_category

    parts = [t.strip() for t in text.split(",") if t.strip()]
    if not parts:
        raise ValueError("--categories: no category given (e.g. 1,2,4)")
    return tuple(sorted({check_category(t) for t in parts}))


def filter_categories(dataset: Dataset, categories: Iterable[int] | None) -> Dataset:
    """``dataset`` with only the probes of ``categories`` (None: unchanged); a dataset left
    with no probe is an error naming the categories it has."""
    if categories is None:
        return dataset
    keep = set(categories)
    convs = tuple(replace(c, probes=tuple(p for p in c.probes if p.category in keep))
                  for c in dataset.conversations)
    out = replace(dataset, conversations=convs)
    if out.probes == 0:
        have = sorted({p.category for c in dataset.conversations for p in c.probes})
        raise ValueError(f"{dataset.name}: no probe of categories {sorted(keep)}; its probes "
                         f"have categories {have}")
    return out


def cached(model: ChatModel, options: Mapping[str, Any]) -> ChatModel:
    """``model`` behind the response cache (on by default; ``cache=False`` turns it off)."""
    if not options.get("cache", True) or isinstance(model, CachedModel):
        return model
    path = options.get("cache_path")
    return CachedModel(model, ResponseCache(Path(path) if path else None))


def judges_for(ctx: BenchContext, model: ChatModel | None) -> tuple[dict[str, ChatModel], list[str]]:
    """The judges (cached), or the answering model as judge with a note saying so."""
    notes: list[str] = []
    if ctx.judges:
        return {name: cached(m, ctx.options) for name, m in ctx.judges.items()}, notes
    if model is None:
        return {}, notes
    if ctx.options.get("no_judge"):
        notes.append("--judges none: no LLM judge; answers scored by LoCoMo F1 / exact match only")
        return {}, notes
    name = ctx.model_spec or model.spec
    notes.append(f"no --judges given: answers were judged by the answering model {name}")
    return {name: model}, notes


def is_synthetic(dataset: Dataset) -> bool:
    """True for generated presets (exact match is scored on them)."""
    return any(c.id.startswith("synth-") for c in dataset.conversations)


def load_bench_dataset(spec: str, *, seed: int = 0) -> Dataset:
    """:func:`copage.eval.datasets.load_dataset` (probes keep the synthetic generator's
    ``answer_forms`` in ``Probe.meta``, so exact match accepts any of them)."""
    from copage.eval.datasets import load_dataset

    return load_dataset(spec, seed=seed)
