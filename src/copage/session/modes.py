"""Recall modes of :class:`PagedChat`: how evicted pages get back into the prompt.

A mode is a combination of steps, written joined by ``+`` in any order:

* ``speculative`` - show the evicted pages best matching the message by BM25, within
  an allowance, before any model call (no model involved;
  :mod:`copage.session.speculate`); the default mode (:data:`DEFAULT_RECALL_MODE`);
* ``choose`` - one constrained model call picks an evicted page (or none), which
  is paged in before the answer (:mod:`copage.session.choose`);
* ``tool`` - the paper's mechanism: the recall tool is offered and the model
  calls it while answering.

``none`` is no step (bookmarks only). ``auto`` picks by what the model
supports (:func:`auto_mode`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from copage.llm.capabilities import TOOLS, supports

STEPS = ("speculative", "choose", "tool")
DEFAULT_RECALL_MODE = "speculative"
"""The recall mode of :class:`PagedChat` and the proxy when none is given (see
``docs/loop.md``, "Choosing the default recall mode")."""


@dataclass(frozen=True, slots=True)
class RecallMode:
    """Which steps a turn runs, in the fixed order speculative, choose, tool."""

    speculative: bool = False
    choose: bool = False
    tool: bool = True

    @property
    def name(self) -> str:
        """The canonical name, e.g. ``speculative+tool`` (``none`` for no step)."""
        steps = [s for s in STEPS if getattr(self, s)]
        return "+".join(steps) if steps else "none"

    def __str__(self) -> str:
        return self.name


def auto_mode(model: Any) -> RecallMode:
    """The mode ``auto`` picks for ``model``.

    Native tool calling: ``choose+tool`` (the choose call routes, the tool stays
    available for a second page). No native tool calling (the text protocol):
    ``choose`` alone, which needs no call syntax at all. The choice rests on the
    measurements in ``docs/loop.md``.
    """
    if supports(model, TOOLS):
        return RecallMode(choose=True, tool=True)
    return RecallMode(choose=True, tool=False)


def parse_mode(text: str, *, model: Any = None, speculative: bool = False) -> RecallMode:
    """A :class:`RecallMode` from ``tool``, ``choose+tool``, ``auto``, ... (``ValueError`` if bad).

    ``speculative=True`` adds the speculative step (the older ``PagedChat`` option).
    """
    if not isinstance(text, str):
        raise TypeError(f"recall_mode must be a str, got {type(text).__name__}")
    key = text.strip().lower()
    if key == "auto":
        mode = auto_mode(model)
    elif key == "none":
        mode = RecallMode(tool=False)
    else:
        parts = [p.strip() for p in key.split("+")]
        bad = [p for p in parts if p not in STEPS]
        if bad or not parts:
            raise ValueError(
                f"unknown recall_mode {text!r}: combine {', '.join(STEPS)} with '+' "
                f"(e.g. 'choose+tool'), or use 'auto' or 'none'"
            )
        mode = RecallMode(*(s in parts for s in STEPS))
    if speculative and not mode.speculative:
        mode = RecallMode(True, mode.choose, mode.tool)
    return mode


LOOP_MODES = ("speculative", "tool", "speculative+tool", "none")
"""The recall modes of a front end that runs no ``choose`` step (the proxy, the LangChain
middleware): :class:`PagedChat`'s, without ``choose`` and ``auto``."""


def loop_mode(text: str, *, owner: str, name: str = "recall_mode") -> RecallMode:
    """The one mode check of the front ends that run no ``choose`` step: the steps of
    :class:`PagedChat`'s mode of that name (:func:`parse_mode`); ``choose`` and ``auto``
    (which needs the model) are refused (``ValueError``). ``owner`` names the front end
    and ``name`` its setting in the messages."""
    valid = ", ".join(LOOP_MODES)
    if isinstance(text, str) and text.strip().lower() == "auto":
        raise ValueError(f"{name} auto is not available in {owner}: name the steps "
                         f"(e.g. speculative+tool); valid: {valid}")
    try:
        mode = parse_mode(text)
    except ValueError as err:
        raise ValueError(f"unknown recall_mode {text!r} for {owner}; valid: {valid}") from err
    if mode.choose:
        raise ValueError(f"{name} {text!r}: {owner} does not run the choose step; "
                         f"valid: {valid}")
    return mode


def proxy_mode(text: str) -> RecallMode:
    """The proxy's :func:`loop_mode` (its messages name ``--recall-mode``)."""
    return loop_mode(text, owner="the proxy", name="--recall-mode")
