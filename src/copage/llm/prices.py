"""Price table (USD per 1M tokens) and per-call cost.

Prices are list prices for standard (uncached, non-batch) input and output
tokens as of 2026-02, copied from the vendors' pricing pages. They change:
check them, and override with :func:`register_price` or a JSON file named by
``COPAGE_PRICES`` (``{"model": [input, output], ...}`` or
``{"model": {"input": x, "output": y}}``). Unknown models cost None.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from copage.llm.types import Usage

PRICES_AS_OF = "2026-02"
ENV_VAR = "COPAGE_PRICES"


@dataclass(frozen=True, slots=True)
class Price:
    """USD per 1M input and output tokens."""

    input: float
    output: float


_BUILTIN: dict[str, Price] = {
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-5-mini": Price(0.25, 2.00),
    "deepseek-chat": Price(0.28, 0.42),
    "deepseek-reasoner": Price(0.28, 0.42),
    "claude-haiku-4-5": Price(1.00, 5.00),
    "claude-sonnet-4-5": Price(3.00, 15.00),
    "claude-3-5-haiku": Price(0.80, 4.00),
    "glm-5": Price(1.00, 3.20),
    "glm-4.6": Price(0.60, 2.20),
    "glm-4.5": Price(0.60, 2.20),
    "glm-4.5-air": Price(0.20, 1.10),
}
_user: dict[str, Price] = {}
_file_cache: tuple[str, dict[str, Price]] | None = None
_DATE = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")


def register_price(model: str, input: float, output: float) -> None:
    """Set the price of ``model`` (USD per 1M input / output tokens)."""
    if input < 0 or output < 0:
        raise ValueError(f"prices must be >= 0, got {input}, {output}")
    _user[model] = Price(float(input), float(output))


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
                table[model] = Price(float(p["input"]), float(p["output"]))
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
    return (usage.prompt_tokens * p.input + usage.completion_tokens * p.output) / 1_000_000
