"""How much of each prompt repeats the previous one, and what that is worth.

Providers bill a prompt prefix they have seen before at a fraction of the input
price, and local servers reuse the KV cache of an unchanged prefix, so a paged
prompt is only cheap if consecutive requests share their beginning. The
:class:`PromptMeter` of a pager sees every request (:meth:`~copage.core.pager.Pager.context`
or what a front end sends, ``meter_request``), renders it as the provider would read
it (tool schemas, then the messages in order), and records how many of its tokens
repeat the previous request's prefix. Beside it, the same figures for sending the
full conversation every time, rendered the same way (each turn a message, the
session headers included), whose history only grows, so its prefix is the previous
request's history.

Prices (USD per 1M input tokens, list prices of 2026-02) and caching rules, as a
user is billed (:data:`PRICES`):

* ``gpt-4o-mini``: 0.15 input, 0.075 cached input (half), no write premium. Caching
  is automatic for prompts of 1,024 tokens or more; the cached part is the repeated
  prefix rounded down to 1,024 + a multiple of 128 tokens.
* Anthropic (``claude-haiku-4-5``: 1.00 input, 0.10 cache read, 1.25 cache write;
  ``claude-sonnet-4-5``: 3.00 / 0.30 / 3.75): the prompt is cached up to a
  ``cache_control`` breakpoint, which copage's Anthropic client
  (``copage.llm.anthropic_convert.mark_history``) puts at the end of the latest
  assistant message: the stable history. What comes after it (the user's new
  message, a speculative fill) is plain input. A breakpoint prefix shorter than the
  model's **minimum cacheable length** (Haiku 4.5: 4,096 tokens; Sonnet 4.5: 1,024)
  is neither written nor read: the whole request is plain input. A cache entry is
  read only **whole**: a request reads the longest earlier breakpoint prefix (of the
  last :data:`ENTRIES` requests, within :data:`LOOKBACK` messages of its own
  breakpoint) that it repeats exactly, and writes the rest up to its breakpoint at
  the write price; a prompt that repeats only part of an earlier entry (a page
  evicted from the front) reads nothing. The 5-minute lifetime of an entry is
  assumed (turns come faster than that).

Output tokens are not counted: they do not depend on how the prompt is built.

The meter is stored with its conversation (:meth:`PromptMeter.to_json`, in the
pager's snapshot), so a reopened conversation, or one served by another worker,
continues its count: the totals exactly, the median over the latest
:data:`STORED_SHARES` requests stored and those since, and the previous request and
cache entries as digests (the next request's prefix is matched whole message by
message; the part of a changed message that still repeats is not credited once).
"""

from __future__ import annotations

import array
import base64
import bisect
import hashlib
import json
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from copage.core.tokens import Tokenizer

MIN_CACHED = 1024
"""OpenAI's shortest cached prompt (tokens), and the smallest minimum of any model here."""
OPENAI_STEP = 128
"""OpenAI caches its prefix in steps of this many tokens past its minimum."""
LOOKBACK = 20
"""Anthropic looks for an earlier cache entry at most this many blocks (here: messages)
before a request's breakpoint."""
ENTRIES = 4
"""Earlier requests whose breakpoint prefixes the meter keeps as Anthropic cache entries."""
MAX_SHARES = 10_000
"""Per-request shares kept for the median (the oldest are dropped)."""

STORED_SHARES = 1_000
"""Per-request shares the stored meter keeps (the latest), so that its size is bounded."""


@dataclass(frozen=True, slots=True)
class CachePrice:
    """USD per 1M input tokens (uncached, read from the cache, written to it), the
    shortest prefix the provider caches, and whose caching rules apply."""

    input: float
    cached: float
    write: float
    min_cached: int = MIN_CACHED
    provider: Literal["openai", "anthropic"] = "openai"


PRICES: dict[str, CachePrice] = {
    "gpt-4o-mini": CachePrice(0.15, 0.075, 0.15, 1024, "openai"),
    "claude-haiku-4-5": CachePrice(1.00, 0.10, 1.25, 4096, "anthropic"),
    "claude-sonnet-4-5": CachePrice(3.00, 0.30, 3.75, 1024, "anthropic"),
}


def cached_tokens(model: str, prompt: int, prefix: int) -> int:
    """Tokens of a ``prompt``-token request that ``model``'s provider bills as read from
    the cache, when its first ``prefix`` tokens repeat a cached prompt (OpenAI: any
    repeated prefix, rounded down to its steps; Anthropic: ``prefix`` is a whole cache
    entry's length)."""
    price = PRICES[model]
    if prompt < price.min_cached or prefix < price.min_cached:
        return 0
    prefix = min(prefix, prompt)
    if price.provider == "openai":
        return price.min_cached + (prefix - price.min_cached) // OPENAI_STEP * OPENAI_STEP
    return prefix


def request_cost(model: str, prompt: int, prefix: int, stable: int | None = None) -> float:
    """USD of one request's input under ``model``'s caching rules (see module docstring).

    OpenAI: ``prefix`` is the repeated prefix (it caches any prefix itself). Anthropic:
    ``prefix`` is the length of the cache entry the request reads (an earlier
    breakpoint prefix it repeats whole; 0: none), ``stable`` the tokens up to its own
    breakpoint (None: the whole request)."""
    price = PRICES[model]
    if price.provider == "openai":
        cached = cached_tokens(model, prompt, prefix)
        return (cached * price.cached + (prompt - cached) * price.input) / 1e6
    stable = prompt if stable is None else max(0, min(stable, prompt))
    if stable < price.min_cached:
        return prompt * price.input / 1e6
    cached = cached_tokens(model, stable, min(prefix, stable))
    return (cached * price.cached + (stable - cached) * price.write
            + (prompt - stable) * price.input) / 1e6


def request_parts(messages: Sequence[Mapping[str, Any]],
                  tools: Sequence[Mapping[str, Any]]) -> list[str]:
    """One request as text parts, in the order a provider reads it (tools, then messages)."""
    parts = [json.dumps(list(tools), separators=(",", ":"), sort_keys=True)] if tools else []
    for m in messages:
        text = f"<|{m.get('role')}|>"
        content = m.get("content")
        if content:
            text += "\n" + str(content)
        if m.get("tool_calls"):
            text += "\n" + json.dumps(m["tool_calls"], separators=(",", ":"), sort_keys=True)
        if m.get("tool_call_id"):
            text += "\n" + str(m["tool_call_id"])
        parts.append(text)
    return parts


def render_request(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]]) -> str:
    """One request as one text (its :func:`request_parts` joined by newlines)."""
    return "\n".join(request_parts(messages, tools))


def common_prefix(a: str, b: str) -> int:
    """Length of the longest common prefix of ``a`` and ``b`` (C-speed slice compares)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class PromptMeter:
    """Per-request prompt tokens, repeated-prefix tokens and cost, paged and full."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self.requests = 0
        # the latest MAX_SHARES shares in millionths, in request order (what is stored)
        self._micro = array.array("I")
        self._ordered: list[float] = []  # the same shares, sorted (the median without a sort)
        self.prompt_tokens = 0
        self.prefix_tokens = 0
        self.full_tokens = 0
        self.cost: dict[str, dict[str, float]] = {
            model: {"paged": 0.0, "paged_cached": 0.0, "full": 0.0, "full_cached": 0.0}
            for model in PRICES
        }
        self._last: list[str] = []  # the previous request's parts (none when restored)
        self._known: dict[str, tuple[int, str]] = {}  # their token counts and digests
        self._last_digests: list[str] = []  # the digests in order (what is stored)
        # Anthropic cache entries: the breakpoint prefixes (number of parts, digest of
        # their digests, tokens) of the latest requests; an entry exists for a model when
        # its tokens reach the model's minimum.
        self._entries: deque[tuple[int, str, int]] = deque(maxlen=ENTRIES)
        self._last_history = 0  # full context: tokens of the previous request's history
        # ... and of its cache breakpoint prefix (the history up to its latest assistant
        # message: Anthropic's cache entry)
        self._last_stable = 0

    def part_tokens(self, message: Mapping[str, Any]) -> int:
        """Tokens of one message as the meter renders it (its part of a request)."""
        return self.tokenizer.count(request_parts([message], [])[0])

    def record(self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]],
               full: int, question: int, tail: int = 0) -> None:
        """Count one request: the paged prompt as sent, and a full-context prompt of
        ``full`` tokens whose last ``question`` tokens are not history and whose ``tail``
        tokens before them follow its latest assistant message (the user's new message:
        history, but after the cache breakpoint, as in the paged request)."""
        parts = request_parts(messages, tools)
        known = {p: self._known.get(p) or (self.tokenizer.count(p), _digest(p)) for p in parts}
        counts = {p: c for p, (c, _) in known.items()}
        keys = [known[p][1] for p in parts]
        tokens = sum(counts[p] for p in parts)  # parts counted apart: boundaries not merged
        prefix = 0
        before = self._last_digests
        for i, part in enumerate(parts):
            if i < len(before) and before[i] == keys[i]:
                prefix += counts[part]
                continue
            if i < len(self._last):  # the first part that differs: its common beginning
                shared = common_prefix(self._last[i], part)  # (unknown once restored)
                prefix += self.tokenizer.count(part[:shared]) if shared else 0
            break
        prefix = min(prefix, tokens)
        # the cache breakpoint: the end of the latest assistant message (the history)
        last = max((i for i, p in enumerate(parts) if p.startswith("<|assistant|>")), default=-1)
        stable = sum(counts[p] for p in parts[:last + 1]) if last >= 0 else 0
        entries = self._matching_entries(keys, last + 1)
        if last >= 0:
            self._entries.append((last + 1, _digest("".join(keys[:last + 1])), stable))
        self._last, self._known, self._last_digests = parts, known, keys
        full_prefix = min(self._last_history, full)
        full_entry = min(self._last_stable, full)
        self._last_history = full - question
        self._last_stable = full_stable = max(0, full - question - tail)
        self.requests += 1
        micro = round(prefix * 1_000_000 / tokens) if tokens else 1_000_000
        self._micro.append(micro)
        bisect.insort(self._ordered, micro / 1_000_000)
        if len(self._micro) > MAX_SHARES:
            old = self._micro.pop(0) / 1_000_000
            del self._ordered[bisect.bisect_left(self._ordered, old)]
        self.prompt_tokens += tokens
        self.prefix_tokens += prefix
        self.full_tokens += full
        for model, price in PRICES.items():
            c = self.cost[model]
            c["paged"] += tokens * price.input / 1e6
            if price.provider == "anthropic":
                read = max((t for _, t in entries if t >= price.min_cached), default=0)
                c["paged_cached"] += request_cost(model, tokens, read, stable)
            else:
                c["paged_cached"] += request_cost(model, tokens, prefix)
            c["full"] += full * price.input / 1e6
            # full context: the breakpoint after its latest assistant message, as the paged
            # request's (OpenAI: its whole history repeats); its
            # history only grows, so the previous request's history is its cache entry
            if price.provider == "anthropic":
                c["full_cached"] += request_cost(model, full, full_entry, full_stable)
            else:
                c["full_cached"] += request_cost(model, full, full_prefix)

    def _matching_entries(self, keys: Sequence[str], end: int) -> list[tuple[int, int]]:
        """(parts, tokens) of the kept cache entries that the request (its parts'
        digests, ``keys``) repeats whole, ending at most :data:`LOOKBACK` parts before
        ``end`` (this request's breakpoint)."""
        out = []
        for n, key, tokens in self._entries:
            if n <= end and end - n <= LOOKBACK and _digest("".join(keys[:n])) == key:
                out.append((n, tokens))
        return out

    @property
    def shares(self) -> list[float]:
        """Each kept request's share of prompt tokens repeating the previous prefix
        (the latest :data:`MAX_SHARES`, in request order, to the millionth)."""
        return [n / 1_000_000 for n in self._micro]

    def to_json(self) -> dict[str, Any]:
        """The meter's state for a store: totals, the latest :data:`STORED_SHARES`
        shares, and the previous request and cache entries as digests (bounded size)."""
        return {
            "requests": self.requests,
            "shares": _pack(self._micro[-STORED_SHARES:]),
            "prompt_tokens": self.prompt_tokens,
            "prefix_tokens": self.prefix_tokens,
            "full_tokens": self.full_tokens,
            "cost": {m: dict(c) for m, c in self.cost.items()},
            "last": list(self._last_digests),
            "entries": [list(e) for e in self._entries],
            "last_history": self._last_history,
            "last_stable": self._last_stable,
        }

    @classmethod
    def from_json(cls, tokenizer: Tokenizer, data: Mapping[str, Any] | None) -> PromptMeter:
        """A meter continuing the count ``to_json`` stored (None or empty: a new one).
        A model of :data:`PRICES` not in the stored costs starts at zero."""
        meter = cls(tokenizer)
        if not data:
            return meter
        meter.requests = int(data.get("requests", 0))
        meter._micro = _unpack(str(data.get("shares") or ""))
        meter._ordered = sorted(meter.shares)
        meter.prompt_tokens = int(data.get("prompt_tokens", 0))
        meter.prefix_tokens = int(data.get("prefix_tokens", 0))
        meter.full_tokens = int(data.get("full_tokens", 0))
        for model, stored in (data.get("cost") or {}).items():
            if model in meter.cost and isinstance(stored, Mapping):
                meter.cost[model].update({k: float(v) for k, v in stored.items()
                                          if k in meter.cost[model]})
        meter._last_digests = [str(d) for d in data.get("last") or ()]
        meter._entries.extend((int(n), str(d), int(t)) for n, d, t in data.get("entries") or ())
        meter._last_history = int(data.get("last_history", 0))
        meter._last_stable = int(data.get("last_stable", meter._last_history))
        return meter

    def summary(self) -> dict[str, Any]:
        """JSON-able figures: requests, median and last prefix share, tokens, costs (USD)."""
        return {
            "requests": self.requests,
            "prefix_share_median": _median(self._ordered),
            "prefix_share_last": self._micro[-1] / 1_000_000 if self._micro else None,
            "prompt_tokens": self.prompt_tokens,
            "prefix_tokens": self.prefix_tokens,
            "full_tokens": self.full_tokens,
            "cost_usd": {m: {k: round(v, 8) for k, v in c.items()} for m, c in self.cost.items()},
        }


def _digest(part: str) -> str:
    """A short digest of one request part (what the stored meter compares)."""
    return hashlib.blake2b(part.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


def _pack(micro: array.array[int]) -> str:
    """Shares in millionths as one base64 string of 32-bit little-endian integers: a
    thousand of them encode in microseconds, where a JSON list of floats takes 0.4 ms."""
    ints = array.array("I", micro)
    if sys.byteorder != "little":
        ints.byteswap()
    return base64.b64encode(ints.tobytes()).decode("ascii")


def _unpack(text: str) -> array.array[int]:
    """The shares (millionths) :func:`_pack` stored; ``ValueError`` if damaged."""
    ints = array.array("I", base64.b64decode(text.encode("ascii"), validate=True))
    if sys.byteorder != "little":
        ints.byteswap()
    if any(n > 1_000_000 for n in ints):
        raise ValueError("a stored prefix share above 1")
    return ints


def _median(ordered: Sequence[float]) -> float | None:
    """The median of sorted values, as :func:`statistics.median` gives it (None if empty)."""
    n = len(ordered)
    if not n:
        return None
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
