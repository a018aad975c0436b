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
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from copage.core.tokens import get_tokenizer
from copage.llm.errors import overflow_of
from copage.memory import PagedMemory

__all__ = ["REFITS", "SHARE", "overflow_of", "refit"]

REFITS = 2
"""Requests a turn may make again after a context overflow."""
SHARE = 0.5
"""The share of the model's window a request is paged down to (room for the answer and
for the conversation to grow before the next overflow)."""
_OVERHEAD = 400
"""Tokens the first evictions add to the request (preamble, tool schema, bookmarks)."""


def refit(mem: PagedMemory, error: BaseException, messages: Sequence[Mapping[str, Any]],
          tools: Sequence[Mapping[str, Any]] = ()) -> bool:
    """Evict ``mem``'s resident pages so that the request ``messages`` (+ ``tools``), which
    the model refused for its window (``error``), would take about :data:`SHARE` of it;
    whether any page was evicted (False: not a context overflow, or nothing left to
    evict: the open page or one message is longer than the window allows)."""
    found = overflow_of(error)
    if found is None:
        return False
    count = get_tokenizer(mem.config.tokenizer).count
    ours = sum(count(_text(m.get("content"))) for m in messages)
    ours += count(json.dumps(list(tools))) if tools else 0
    ratio = found.asked / ours if found.asked and ours else 1.0  # its tokens per ours
    target = (SHARE * found.window / ratio) if found.window else ours / 2
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
