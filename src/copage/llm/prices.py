"""Price table (USD per 1M tokens) and per-call cost.

Prices are list prices for standard (non-batch) input and output tokens as of
2026-02, copied from the vendors' pricing pages, with the prompt-cache prices where
the vendor has them: input read from the cache (OpenAI's "cached input",
Anthropic's cache read) and input written to it (Anthropic's 5-minute cache write,
1.25x input). A call's cost bills its :class:`~copage.llm.model_types.Usage` that way:
``cached_tokens`` at the cached price, ``cache_write_tokens`` at the write price,
the rest of the prompt at the input price. They change: check them, and override
with :func:`register_price` or a JSON file named by ``COPAGE_PRICES``
(``{"model": [input, output], ...}`` or ``{"model": {"input": x, "output": y,
"cached": c, "write": w}}``; without ``cached``/``write`` those tokens cost input).
Unknown models cost None.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from copage.llm.model_types import Usage

PRICES_AS_OF = "2026-02"
ENV_VAR = "COPAGE_PRICES"


@dataclass(frozen=True, slots=True)
class Price:
    """USD per 1M input and output tokens, and input read from / written to the prompt
    cache (None: as ``input``)."""

    input: float
    output: float
    cached: float | None = None
    write: float | None = None


_BUILTIN: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "gpt-5-mini": Price(0.25, 2.00, 0.025),
    "deepseek-chat": Price(0.28, 0.42, 0.028),
    "deepseek-reasoner": Price(0.28, 0.42, 0.028),
    "claude-haiku-4-5": Price(1.00, 5.00, 0.10, 1.25),
    "claude-sonnet-4-5": Price(3.00, 15.00, 0.30, 3.75),
    "claude-3-5-haiku": Price(0.80, 4.00, 0.08, 1.00),
    "glm-5": Price(1.00, 3.20),
    "glm-4.6": Price(0.60, 2.20),
    "glm-4.5": Price(0.60, 2.20),
    "glm-4.5-air": Price(0.20, 1.10),
}
_user: dict[str, Price] = {}
_file_cache: tuple[str, dict[str, Price]] | None = None
_DATE = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


def register_price(model: str, input: float, output: float, cached: float | None = None,
                   write: float | None = None) -> None:
    """Set the price of ``model`` (USD per 1M input / output tokens, and input read from /
    written to the prompt cache; None: as input)."""
    if min(input, output, *(x for x in (cached, write) if x is not None)) < 0:
        raise ValueError(f"prices must be >= 0, got {input}, {output}, {cached}, {write}")
    _user[model] = Price(float(input), float(output), _opt(cached), _opt(write))


def _opt(value: float | str | None) -> float | None:
    return None if value is None else float(value)


def _from_file() -> dict[str, Price]:
    global _file_cache
    path = os.environ.get(ENV_VAR)
    if not path:
        return {}
    if _file_cache is not None and _file_cache[0] == path:
        return _file_cache[1]
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        table: dict[str, Price] = {}
        for model, p in data.items():
            if isinstance(p, dict):
                table[model] = Price(float(p["input"]), float(p["output"]),
                                     _opt(p.get("cached")), _opt(p.get("write")))
            else:
                table[model] = Price(float(p[0]), float(p[1]))
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as e:
        raise ValueError(f"{ENV_VAR}={path}: cannot read prices ({e})") from None
    _file_cache = (path, table)
    return table


def price_of(model: str) -> Price | None:
    """The price of ``model``: exact name, then without ``vendor/`` and a date suffix."""
    tables = (_user, _from_file(), _BUILTIN)
    names = [model]
    base = model.rsplit("/", 1)[-1]
    names += [base, _DATE.sub("", base)]
    for name in names:
        for table in tables:
            if name in table:
                return table[name]
    return None


def cost_of(model: str, usage: Usage) -> float | None:
    """USD cost of one call, or None when the model's price is unknown."""
    p = price_of(model)
    if p is None:
        return None
    cached, written = usage.cached_tokens, usage.cache_write_tokens
    plain = max(0, usage.prompt_tokens - cached - written)
    read_price = p.input if p.cached is None else p.cached
    write_price = p.input if p.write is None else p.write
    return (plain * p.input + cached * read_price + written * write_price
            + usage.completion_tokens * p.output) / 1_000_000
