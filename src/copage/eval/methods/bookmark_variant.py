"""Which copage features a bookmark method uses (:class:`Variant`), and the speaker
names its reference readers know (see :mod:`copage.eval.methods.bookmark`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from copage.core.dense_rank import DenseRanker
from copage.core.text import content_words
from copage.eval.datasets.probes import Conversation
from copage.eval.methods.method import MethodSettings
from copage.eval.methods.templates import session_templates_id
from copage.session.modes import parse_mode

__all__ = ["RECALL_MODES", "Variant", "dense_ranker", "speaker_names"]

def dense_ranker(required: bool = True) -> DenseRanker | None:
    """The benchmark's meaning channel (one per process, its embeddings kept in
    copage.dense's default cache file): ``required``, the model :func:`copage.dense.
    find_model` finds (``ModelMissing`` without it); else copage's default channel (None
    when the model's files are not installed or ``COPAGE_DENSE=off``). It always waits
    for the turns' vectors (``COPAGE_DENSE_WAIT`` does not apply), so that a figure
    does not depend on how busy the machine was."""
    from copage.dense.default_channel import default_ranker

    return default_ranker("auto" if required else None, cache=True, wait=True)


def speaker_names(conversation: Conversation) -> frozenset[str]:
    """The lower-cased words of the conversation's speaker names (and the two roles)."""
    names = {"user", "assistant"}
    for t in conversation.turns:
        if t.speaker:
            names.update(content_words(t.speaker))
            names.update(w.lower() for w in t.speaker.split())
    return frozenset(names)


RECALL_MODES: dict[str, str] = {
    "page": "tool", "query": "tool", "choose": "choose", "choose+tool": "choose+tool",
    "none": "none",
}
"""Recall kind of a bookmark method -> ``recall_mode`` of :class:`PagedChat` (without
``speculative``, which :attr:`Variant.speculative` adds)."""


@dataclass(frozen=True, slots=True)
class Variant:
    """Which copage features a bookmark method uses.

    Attributes:
        recall: the recall kind (:data:`RECALL_MODES`): ``page`` (the paper's
            ``recall(page)`` tool), ``query`` (``recall(query)`` allowed too),
            ``choose`` (:class:`PagedChat`'s ``choose`` mode: one constrained call
            picks a page, then the answer without a tool) or ``choose+tool`` (the
            same, the recall tool still offered). Each step has its reference
            reader (:mod:`.readers`): ``choose`` for the choose call, ``page`` or
            ``query`` for the tool; ``none``: neither (only with ``speculative``).
        speculative: the speculative fill before each probe.
        copage: copage's defaults (``PagerConfig()``: its boundary, policy, keywords
            and bounded index) instead of the paper's settings.
        dense: the fill's meaning channel (``FillSettings(dense=...)``, docs/dense.md),
            required, its model found by :func:`copage.dense.find_model`. Without it a
            ``copage`` variant with the fill has copage's default channel, as the
            library (on when the model's files are installed, unless
            ``COPAGE_DENSE=off``); the paper's variants never have one.
    """

    recall: str = "page"
    speculative: bool = False
    copage: bool = False
    dense: bool = False

    def __post_init__(self) -> None:
        if self.recall not in RECALL_MODES:
            raise ValueError(f"unknown recall kind {self.recall!r}; valid: {', '.join(RECALL_MODES)}")
        if self.dense and not self.speculative:
            raise ValueError("the dense channel is part of the speculative fill: dense needs speculative")

    def ranker(self) -> DenseRanker | None:
        """This variant's meaning channel (None: BM25 only; the class docstring)."""
        if self.dense:
            return dense_ranker()
        return dense_ranker(required=False) if self.copage and self.speculative else None

    @property
    def by_query(self) -> bool:
        """True when ``recall(query=...)`` is offered."""
        return self.recall == "query"

    @property
    def mode(self) -> str:
        """The ``recall_mode`` of a model run (``speculative+`` first when speculative)."""
        mode = RECALL_MODES[self.recall]
        if not self.speculative:
            return mode
        return "speculative" if mode == "none" else f"speculative+{mode}"

    @property
    def steps(self) -> tuple[str, ...]:
        """The steps of :attr:`mode`, in the order they run."""
        return () if self.mode == "none" else tuple(self.mode.split("+"))

    @classmethod
    def of_mode(cls, mode: str, *, copage: bool = False) -> Variant:
        """The variant running ``PagedChat``'s recall ``mode`` (``auto`` is not a mode here)."""
        m = parse_mode(mode)
        recall = {(False, True): "page", (True, False): "choose", (True, True): "choose+tool",
                  (False, False): "none"}[(m.choose, m.tool)]
        return cls(recall=recall, speculative=m.speculative, copage=copage)

    def chat_options(self, settings: MethodSettings, tokens: int | None = None) -> dict[str, Any]:
        """Keyword arguments of :class:`PagedChat` for a model run of this variant;
        ``tokens``: the fill's allowance (None: the fill's default)."""
        from copage.session.fill_settings import FillSettings

        fill = FillSettings(threshold=settings.speculative_threshold,
                            relative=settings.speculative_relative,
                            dense=self.ranker())
        if tokens is not None:
            fill = replace(fill, tokens=tokens)
        return {"max_recalls_per_turn": settings.max_recalls, "recall_mode": self.mode,
                "prompt": settings.prompt_style, "fill": fill,
                "temperature": settings.temperature, "max_tokens": settings.max_tokens}

    def config(self, settings: MethodSettings) -> dict[str, Any]:
        """What of this variant changes its prompts, for the resume key: the recall mode,
        the prompt style, and the templates of :class:`PagedChat`'s prompt styles and
        choose call."""
        return {"recall_mode": self.mode, "prompt_style": settings.prompt_style,
                "session_templates": session_templates_id(),
                **({"dense": True} if self.ranker() is not None else {})}
