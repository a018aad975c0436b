"""Reading a ``.safetensors`` file with numpy alone.

The format (Hugging Face's safetensors): an 8-byte little-endian header length, a JSON
header (tensor name -> ``dtype``, ``shape``, ``data_offsets`` into the data after the
header; an optional ``__metadata__`` entry), then the raw little-endian data.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["read_safetensors"]

_DTYPES: dict[str, Any] = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
    "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_,
}
_MAX_HEADER = 100_000_000
"""The reference implementation refuses larger headers too."""


def read_safetensors(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """The tensors of a ``.safetensors`` file, by name (read-only arrays; BF16 is widened
    to float32).

    Raises:
        ValueError: the file is truncated or not a well-formed safetensors file (the
            message names the file).
    """
    with open(path, "rb") as f:
        blob = f.read()

    def bad(why: str) -> ValueError:
        return ValueError(f"{os.fspath(path)}: not a valid safetensors file "
                          f"(truncated or damaged?): {why}")

    if len(blob) < 8:
        raise bad(f"{len(blob)} bytes, shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > _MAX_HEADER or 8 + n > len(blob):
        raise bad(f"header of {n} bytes announced, the file has {len(blob)}")
    try:
        head = json.loads(blob[8:8 + n])
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise bad(f"header is not JSON ({e})") from None
    if not isinstance(head, dict):
        raise bad("header is not a JSON object")
    data = memoryview(blob)[8 + n:]
    out: dict[str, np.ndarray] = {}
    for name, v in head.items():
        if name == "__metadata__":
            continue
        out[name] = _tensor(name, v, data, bad)
    return out


def _tensor(name: str, v: Any, data: memoryview,
            bad: Callable[[str], ValueError]) -> np.ndarray:
    try:
        dtype, shape, (a, b) = v["dtype"], [int(d) for d in v["shape"]], v["data_offsets"]
    except (KeyError, TypeError, ValueError):
        raise bad(f"tensor {name!r}: entry {v!r} lacks dtype, shape or data_offsets") from None
    if dtype != "BF16" and dtype not in _DTYPES:
        raise bad(f"tensor {name!r}: unknown dtype {dtype!r} "
                  f"(known: {', '.join(sorted([*_DTYPES, 'BF16']))})")
    size = 2 if dtype == "BF16" else np.dtype(_DTYPES[dtype]).itemsize
    if not (isinstance(a, int) and isinstance(b, int) and 0 <= a <= b):
        raise bad(f"tensor {name!r}: bad data_offsets {[a, b]}")
    if b > len(data):
        raise bad(f"tensor {name!r} ends at byte {b} of the data, which has {len(data)}")
    if b - a != math.prod(shape) * size:
        raise bad(f"tensor {name!r}: {b - a} bytes for shape {shape} of {dtype}")
    raw = data[a:b]
    if dtype == "BF16":
        wide = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
        return wide.view(np.float32).reshape(shape)
    return np.frombuffer(raw, dtype=np.dtype(_DTYPES[dtype]).newbyteorder("<")).reshape(shape)
