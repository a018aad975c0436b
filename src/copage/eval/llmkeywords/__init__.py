"""Keyword generators that call a model (paper section 6), beside the offline ones.

The core never imports model code, so these live outside it. Two ways in:

* ``llm_extractor(name, model, **options)`` builds one generator directly;
* ``with_llm_extractors(model)`` returns a NEW registry: the core's ``EXTRACTORS``
  plus ``llm-contextual``, ``llm-batch``, ``hybrid`` and ``auto`` bound to ``model``
  (pass it as ``PagerConfig(extractors=...)``; the global registry is not changed:
  what the experiments use);
* ``register_llm_extractors(model)`` adds factories for ``llm-contextual``,
  ``llm-batch``, ``hybrid`` and ``auto`` (bound to ``model``) to a registry -
  by default the core's ``EXTRACTORS``, so that ``PagerConfig(keywords="hybrid")``
  and ``--keywords hybrid`` work - and returns that registry. Registering again
  rebinds the names to the new model. Pass ``registry=Registry("keyword
  extractor")`` to keep the global one untouched.

Every generator implements ``KeywordExtractor``; a reply it cannot use falls back
per page to the offline ``heuristic`` extractor with an ``LLMKeywordWarning``.
"""

from __future__ import annotations

from collections.abc import Callable

from copage.core.keywords import EXTRACTORS, KeywordExtractor
from copage.core.registry import Registry, UnknownNameError, check_options
from copage.eval.llmkeywords.auto import DEFAULT_THRESHOLD, AutoGenerator
from copage.eval.llmkeywords.batch import BatchGenerator
from copage.eval.llmkeywords.contextual import ContextualGenerator
from copage.eval.llmkeywords.generator import (
    GeneratorStats,
    LLMGenerator,
    LLMKeywordWarning,
    LLMOptions,
)
from copage.eval.llmkeywords.hybrid import HybridGenerator
from copage.eval.llmkeywords.mass import heuristic_mass, page_mass
from copage.llm.model_types import ChatModel

__all__ = [
    "DEFAULT_THRESHOLD",
    "LLM_EXTRACTOR_NAMES",
    "AutoGenerator",
    "BatchGenerator",
    "ContextualGenerator",
    "GeneratorStats",
    "HybridGenerator",
    "LLMGenerator",
    "LLMKeywordWarning",
    "LLMOptions",
    "heuristic_mass",
    "llm_extractor",
    "page_mass",
    "register_llm_extractors",
    "with_llm_extractors",
]

_CLASSES: dict[str, type[LLMGenerator]] = {
    "llm-contextual": ContextualGenerator,
    "llm-batch": BatchGenerator,
    "hybrid": HybridGenerator,
    "auto": AutoGenerator,
}
LLM_EXTRACTOR_NAMES: tuple[str, ...] = tuple(_CLASSES)
"""Names of the model-backed generators."""

_COMMON = ("temperature", "max_tokens", "page_chars", "prompt_chars", "digest_chars",
           "concurrency")
_OWN: dict[str, tuple[str, ...]] = {"hybrid": ("extend",), "auto": ("threshold", "extend")}


def llm_extractor(name: str, model: ChatModel, **options: object) -> KeywordExtractor:
    """The model-backed generator ``name`` using ``model``.

    Options: ``temperature``, ``max_tokens``, ``page_chars``, ``prompt_chars``,
    ``digest_chars``, ``concurrency`` (see ``LLMOptions``); ``hybrid(extend=False)``;
    ``auto(threshold=DEFAULT_THRESHOLD, extend=False)``. Raises ``UnknownNameError``
    listing the valid names.
    """
    if name not in _CLASSES:
        raise UnknownNameError("LLM keyword generator", name, list(_CLASSES))
    own = _OWN.get(name, ())
    check_options(f"keyword extractor {name!r}", options, [*_COMMON, *own])
    common = LLMOptions(**{k: v for k, v in options.items() if k in _COMMON})  # type: ignore[arg-type]
    extra = {k: v for k, v in options.items() if k in own}
    gen: LLMGenerator = _CLASSES[name](model, common, **extra)
    return gen


def _factory(name: str, model: ChatModel) -> Callable[..., KeywordExtractor]:
    def make(**options: object) -> KeywordExtractor:
        return llm_extractor(name, model, **options)

    return make


def register_llm_extractors(
    model: ChatModel, registry: Registry[KeywordExtractor] | None = None
) -> Registry[KeywordExtractor]:
    """Register the four generators, bound to ``model``, in ``registry`` (default ``EXTRACTORS``)."""
    target = EXTRACTORS if registry is None else registry
    for name in _CLASSES:
        target.register(name, _factory(name, model))
    return target


def with_llm_extractors(
    model: ChatModel, registry: Registry[KeywordExtractor] | None = None
) -> Registry[KeywordExtractor]:
    """A new registry: ``registry`` (default ``EXTRACTORS``) plus the four generators bound
    to ``model``; ``registry`` itself is left as it is."""
    base = EXTRACTORS if registry is None else registry
    return base.extended({name: _factory(name, model) for name in _CLASSES})
