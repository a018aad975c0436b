"""A request the model's window could not hold: page the conversation down and ask again.

Beyond the paper. The paging budget (``budget_tokens``, 48,000 by default) is chosen for
models with large windows; a local model with 4,096 or 8,192 tokens rejects a request
before the budget is reached (llama.cpp's "exceeds the available context size", OpenAI's
``context_length_exceeded``: :class:`copage.llm.ContextOverflow`). Then, as MemGPT's
agents do on a context overflow, the turn does not fail: the resident pages are evicted
by the policy (:meth:`copage.PagedMemory.shrink`) until the request takes about half the
window, measured with the server's own count of the rejected request, and the request is
prepared again (bookmarks, the fill) and sent once more; at most :data:`REFITS` times per
turn, and only when no part of an answer was given yet. Nothing is lost: the evicted
pages are bookmarked and recallable; the failed request is not billed by the servers
that say so; it is metered as sent, and the request made again as a follow-up of the
turn, so that full context is counted once. docs/paging-budget.md.

A refusal that says the window's size is remembered for the model
(:class:`KnownWindows`, kept by the proxy's upstream, each ``PagedChat``, the LangChain
middleware, the Agents SDK session and the LiteLLM hook, in the process's memory): from
then on a request estimated to pass :data:`TRIGGER` of that window is paged down
before it is sent (:func:`fit_known`), as the paging budget would have done had it
been set to the window, so a growing chat is refused once, not once per half window.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from copage.core.tokens import get_tokenizer
from copage.llm.errors import overflow_of
from copage.memory import PagedMemory
from copage.session.prepare import Prepared

__all__ = ["REFITS", "SHARE", "TRIGGER", "KnownWindows", "Window", "fit_known", "fitted",
           "overflow_of", "refit", "request_tokens", "window_of"]

log = logging.getLogger("copage.overflow")

REFITS = 2
"""Requests a turn may make again after a context overflow."""
SHARE = 0.5
"""The share of the model's window a request is paged down to (room for the answer and
for the conversation to grow before the next overflow)."""
TRIGGER = 0.9
"""A request estimated to take more than this share of a model's known window is paged
down (to :data:`SHARE`) before it is sent: the estimate converts copage's count with the
ratio the refusal showed, so the margin covers what the two counts still differ by."""
_OVERHEAD = 400
"""Tokens the first evictions add to the request (preamble, tool schema, bookmarks)."""


@dataclass(frozen=True, slots=True)
class Window:
    """A model's context window as a refusal told it: ``tokens`` in the model's own
    tokens, ``ratio`` the model's tokens per token of copage's count."""

    tokens: int
    ratio: float


class KnownWindows:
    """The windows models have refused requests for, by model spec (thread-safe; a
    process's memory, learned again after a restart by one refusal)."""

    def __init__(self) -> None:
        self._by: dict[str, Window] = {}
        self._lock = threading.Lock()

    def get(self, model: str) -> Window | None:
        """The window learned for ``model``, or None."""
        with self._lock:
            return self._by.get(model)

    def learn(self, model: str, window: Window) -> None:
        """Remember ``window`` for ``model`` (the smallest one told wins)."""
        with self._lock:
            known = self._by.get(model)
            if known is None or window.tokens < known.tokens:
                self._by[model] = window
                log.info("%s: its context window is %d tokens; requests are paged to fit it "
                         "before they are sent from now on", model, window.tokens)


def refit(mem: PagedMemory, error: BaseException, messages: Sequence[Mapping[str, Any]],
          tools: Sequence[Mapping[str, Any]] = (), *, known: KnownWindows | None = None,
          model: str = "") -> bool:
    """Evict ``mem``'s resident pages so that the request ``messages`` (+ ``tools``), which
    the model refused for its window (``error``), would take about :data:`SHARE` of it;
    whether any page was evicted (False: not a context overflow, or nothing left to
    evict: the open page or one message is longer than the window allows). A window
    the refusal states is remembered in ``known`` for ``model``."""
    found = overflow_of(error)
    if found is None:
        return False
    ours = request_tokens(mem.config.tokenizer, messages, tools)
    window = window_of(found, ours)
    if window is not None and known is not None:
        known.learn(model, window)
    return _down(mem, ours, SHARE * window.tokens / window.ratio if window else ours / 2)


def window_of(error: BaseException, ours: int) -> Window | None:
    """The window a refusal (``error``) states, with the ratio of its count of the refused
    request to ``ours`` (copage's count of it); None when it states none."""
    found = overflow_of(error)
    if found is None or not found.window:
        return None
    return Window(found.window, found.asked / ours if found.asked and ours else 1.0)


def fit_known(mem: PagedMemory, window: Window | None, messages: Sequence[Mapping[str, Any]],
              tools: Sequence[Mapping[str, Any]] = (), *, extra: int = 0) -> bool:
    """Before the request ``messages`` (+ ``tools``, + ``extra`` tokens that a front end
    adds after this call, e.g. a fill still to come) is sent: if it would take more than
    :data:`TRIGGER` of the model's known ``window``, evict resident pages as :func:`refit`
    does after a refusal (the caller prepares the request again); whether any page was
    evicted (False too when the window is not known)."""
    if window is None:
        return False
    ours = request_tokens(mem.config.tokenizer, messages, tools) + extra
    if ours * window.ratio <= TRIGGER * window.tokens:
        return False
    return _down(mem, ours, SHARE * window.tokens / window.ratio)


def fitted(mem: PagedMemory, window: Window, prep: Prepared, remake: Callable[[], Prepared],
           question: str | None = None) -> Prepared:
    """The request to send a model whose ``window`` is known, from ``prep`` (prepared
    unmetered): paged down and prepared again (``remake``) when it would not fit
    (:func:`fit_known`), then metered as it is sent (``question``: the turn's)."""
    if fit_known(mem, window, prep.messages, prep.tools):
        prep = remake()
    mem.meter_request(prep.messages, prep.tools, question)
    return prep


def request_tokens(tokenizer: str, messages: Sequence[Mapping[str, Any]],
                   tools: Sequence[Mapping[str, Any]] = ()) -> int:
    """A request's size by copage's count (``tokenizer``): its texts and tool schemas."""
    count = get_tokenizer(tokenizer).count
    ours = sum(count(_text(m.get("content"))) for m in messages)
    return ours + (count(json.dumps(list(tools))) if tools else 0)


def _down(mem: PagedMemory, ours: int, target: float) -> bool:
    resident = sum(mem.page(pid).tokens for pid in mem.resident)
    keep = int(resident - (ours - target) - (0 if mem.evicted else _OVERHEAD))
    if not resident or keep >= resident:
        return False
    return bool(mem.shrink(max(0, keep)))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) if isinstance(p, Mapping) else str(p)
                        for p in content)
    return "" if content is None else str(content)
