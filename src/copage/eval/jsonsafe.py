"""Strict JSON for everything the benchmark writes: NaN and infinities become ``null``.

Python's ``json`` writes bare ``NaN``/``Infinity`` by default, which no other
language's JSON parser accepts; :func:`dumps` writes ``null`` instead and refuses
anything else that is not JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def clean(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (containers recursively).

    Tuples become lists, paths and other objects their ``str``; mapping keys strings.
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, Mapping):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [clean(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return str(value)


def dumps(value: Any, *, indent: int | None = None, sort_keys: bool = False) -> str:
    """Strict JSON text of ``value`` (see :func:`clean`); one line unless ``indent``."""
    return json.dumps(clean(value), ensure_ascii=False, sort_keys=sort_keys, indent=indent,
                      allow_nan=False)
