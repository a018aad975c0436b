"""Shared pieces of the method experiments (``main``, ``judges``): settings, samples, models."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from copage.eval.datasets.model import Conversation, Dataset, Probe
from copage.eval.experiments.base import BenchContext, PagingSettings
from copage.eval.methods import MethodSettings
from copage.llm.cache import CachedModel, ResponseCache
from copage.llm.types import ChatModel

_DEFAULT = PagingSettings()
_SETTING_OPTIONS = ("full_window", "window", "top_k", "copage_policy", "copage_boundary",
                    "copage_keywords", "max_recalls", "max_tokens", "speculative_threshold")


def has_sessions(dataset: Dataset) -> bool:
    """True when some conversation has more than one session (LoCoMo files)."""
    return any(len({t.session for t in c.turns}) > 1 for c in dataset.conversations)


def settings_for(dataset: Dataset, ctx: BenchContext) -> MethodSettings:
    """Method settings for one dataset.

    Boundary: ``ctx.options["boundary"]`` or a non-default ``--boundary``; else
    ``session`` on files with sessions (resident: the last session and
    ``extra_resident`` (3) more); else ``fixed_5`` with 2 resident pages on the
    ``controlled`` preset (the paper's section 4: early pages compressed to 3-5
    bookmarks); else ``fixed_10`` with ``k`` (5) resident pages.
    """
    opts = ctx.options
    paging = ctx.paging
    override = opts.get("boundary") or (
        paging.boundary[0] if tuple(paging.boundary) != tuple(_DEFAULT.boundary) else None)
    k = int(paging.k[0]) if paging.k else 5
    if override:
        boundary, resident = str(override), k
    elif has_sessions(dataset):
        boundary, resident = "session", 1 + int(opts.get("extra_resident", 3))
    elif dataset.name == "controlled":
        boundary, resident = "fixed_5", 2
    else:
        boundary, resident = "fixed_10", k
    policy = paging.policy[0] if tuple(paging.policy) != tuple(_DEFAULT.policy) else "lru"
    base = MethodSettings(
        boundary=boundary, resident_pages=resident, policy=policy,
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
