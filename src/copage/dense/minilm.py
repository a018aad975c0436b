"""all-MiniLM-L6-v2 sentence embeddings in numpy (no torch, no ``tokenizers``).

The forward pass is BERT's (Devlin et al. 2019; post-LayerNorm, GELU with erf), then
mean pooling over the real tokens and L2 normalisation, as the model's
sentence-transformers ``modules.json`` says; inputs are cut at 256 word pieces (its
``max_seq_length``). Written after a research script (bench/minilm_numpy.py, removed once this reproduced it exactly).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from copage.dense.model_files import MODEL_NAME
from copage.dense.tensor_file import read_safetensors
from copage.dense.wordpiece import WordPiece

__all__ = ["BATCH_TOKENS", "FFN_ROWS", "MAX_LEN", "QSCALE", "MiniLM", "dequantize"]

MAX_LEN = 256
"""Word pieces per text, ``[CLS]`` and ``[SEP]`` included (the model's ``max_seq_length``)."""
BATCH_TOKENS = 4096
"""Padded word pieces per forward pass: bounds the attention scores' memory."""
FFN_ROWS = 1024
"""Word pieces per slice of the feed-forward layers (their 1,536-wide activations)."""


def _erf(x: np.ndarray) -> np.ndarray:
    """erf by Abramowitz & Stegun 7.1.26 (absolute error below 1.5e-7), with few
    temporaries (the argument is the feed-forward layer's widest array)."""
    a = np.abs(x)
    t = a * 0.3275911
    t += 1.0
    np.reciprocal(t, out=t)
    y: np.ndarray = t * 1.061405429
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        y += c
        y *= t
    del t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    y *= a
    np.subtract(1.0, y, out=y)
    y *= np.sign(x)
    return y


def _gelu(h: np.ndarray) -> np.ndarray:
    """GELU with erf, as BERT's ``gelu``: 0.5 h (1 + erf(h / sqrt 2))."""
    e = _erf(h * np.float32(0.7071067811865476))
    e += 1.0
    e *= h
    e *= 0.5
    return e


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    out: np.ndarray = (x - m) / np.sqrt(v + eps) * w + b
    return out


QSCALE = ".qscale"
"""The suffix of an int8 tensor's per-row scales (scripts/quantize-minilm.py)."""


def dequantize(w: dict[str, np.ndarray], path: Path) -> dict[str, np.ndarray]:
    """Weights with every int8 tensor ``n`` that has a ``n.qscale`` (one float32 per row)
    widened to float32: ``n * n.qscale[:, None]``.

    Raises:
        ValueError: a scale without its tensor, or of the wrong shape.
    """
    out = {n: a for n, a in w.items() if not n.endswith(QSCALE)}
    for n, scale in w.items():
        if not n.endswith(QSCALE):
            continue
        base = n[: -len(QSCALE)]
        q = out.get(base)
        if q is None or q.ndim != 2 or q.dtype != np.int8 or scale.shape != (q.shape[0],):
            raise ValueError(f"{path}: {n} of shape {scale.shape} does not scale an int8 "
                             f"matrix named {base!r}")
        out[base] = q.astype(np.float32) * scale.astype(np.float32)[:, None]
    return out


class MiniLM:
    """Sentence embeddings (unit rows of ``dim`` float32) from a model folder with
    ``config.json``, ``vocab.txt`` and ``model.safetensors``.

    Attributes:
        dim: the embedding size (384).
        name: the model's name, part of every cache key of its embeddings.
    """

    name: str = MODEL_NAME

    def __init__(self, model_dir: str | os.PathLike[str], max_len: int = MAX_LEN) -> None:
        d = Path(model_dir)
        cfg = json.loads((d / "config.json").read_text(encoding="utf-8"))
        try:
            self.layers = int(cfg["num_hidden_layers"])
            self.heads = int(cfg["num_attention_heads"])
            self.dim = int(cfg["hidden_size"])
            positions = int(cfg["max_position_embeddings"])
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{d / 'config.json'}: not a BERT config ({e!r} missing)") from None
        if not 2 <= max_len <= positions:
            raise ValueError(f"max_len must be in 2..{positions}, got {max_len}")
        self.max_len = max_len
        self.tokenizer = WordPiece.from_file(d / "vocab.txt")
        self.w = read_safetensors(d / "model.safetensors")
        if any(n.endswith(QSCALE) for n in self.w):
            self.w = dequantize(self.w, d / "model.safetensors")
            self.name = f"{MODEL_NAME}-int8"  # its vectors differ: another cache key
        self._check_weights(d)

    def _check_weights(self, d: Path) -> None:
        names = ["embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
                 "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight",
                 "embeddings.LayerNorm.bias"]
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            for n in ("attention.self.query", "attention.self.key", "attention.self.value",
                      "attention.output.dense", "attention.output.LayerNorm",
                      "intermediate.dense", "output.dense", "output.LayerNorm"):
                names += [p + n + ".weight", p + n + ".bias"]
        missing = [n for n in names if n not in self.w]
        if missing:
            raise ValueError(f"{d / 'model.safetensors'}: not a BERT model of this config, "
                             f"lacks {len(missing)} tensors, e.g. {missing[:3]}")
        rows, cols = self.w["embeddings.word_embeddings.weight"].shape
        if cols != self.dim or rows <= max(self.tokenizer.vocab.values()):
            raise ValueError(f"{d}: word embeddings of shape {(rows, cols)} do not fit "
                             f"hidden_size {self.dim} and the {len(self.tokenizer.vocab)} "
                             "tokens of vocab.txt")
        for k, v in self.w.items():  # compute in float32 whatever the file holds
            if v.dtype != np.float32:
                self.w[k] = v.astype(np.float32)

    def _linear(self, a: np.ndarray, name: str) -> np.ndarray:
        """torch's ``Linear``: its weight is (out, in), so ``a @ W.T`` (BLAS reads the
        transposed view as it is, no copy)."""
        out: np.ndarray = a @ self.w[name + ".weight"].T + self.w[name + ".bias"]
        return out

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Unit embeddings of a padded batch: ids and mask of shape (B, L)."""
        w, (B, L), D, H = self.w, ids.shape, self.dim, self.heads
        dh = D // H
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:L][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        neg = ((1.0 - mask) * -1e9).astype(np.float32)[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(dh))
        linear = self._linear
        for i in range(self.layers):
            p = f"encoder.layer.{i}."
            x2 = x.reshape(B * L, D)
            q, k, v = (linear(x2, f"{p}attention.self.{n}") for n in ("query", "key", "value"))
            q = np.ascontiguousarray(q.reshape(B, L, H, dh).transpose(0, 2, 1, 3))
            k = np.ascontiguousarray(k.reshape(B, L, H, dh).transpose(0, 2, 3, 1))
            v = np.ascontiguousarray(v.reshape(B, L, H, dh).transpose(0, 2, 1, 3))
            s = q @ k
            s *= scale
            s += neg
            s -= s.max(-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(-1, keepdims=True)
            c = (s @ v).transpose(0, 2, 1, 3).reshape(B * L, D)
            del s, q, k, v
            x2 = _layer_norm(x2 + linear(c, p + "attention.output.dense"),
                             w[p + "attention.output.LayerNorm.weight"],
                             w[p + "attention.output.LayerNorm.bias"])
            f = np.empty_like(x2)
            for r in range(0, B * L, FFN_ROWS):  # the 4x wider layer, a slice at a time
                part = _gelu(linear(x2[r:r + FFN_ROWS], p + "intermediate.dense"))
                f[r:r + FFN_ROWS] = linear(part, p + "output.dense")
            x = _layer_norm(x2 + f, w[p + "output.LayerNorm.weight"],
                            w[p + "output.LayerNorm.bias"]).reshape(B, L, D)
        m = mask[:, :, None]
        e = (x * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        out: np.ndarray = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
        return out

    def encode(self, texts: Sequence[str], batch: int = 32) -> np.ndarray:
        """One unit row per text, in the order of ``texts`` (shape ``(len(texts), dim)``,
        float32). Texts of similar length are run together, at most ``batch`` texts and
        :data:`BATCH_TOKENS` padded word pieces at a time (the attention scores of a
        batch grow with its length squared)."""
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts, not one str")
        if batch < 1:
            raise ValueError(f"batch must be at least 1, got {batch}")
        encs = [self.tokenizer.encode(t, self.max_len) for t in texts]
        order = sorted(range(len(encs)), key=lambda i: len(encs[i]))
        out = np.zeros((len(encs), self.dim), dtype=np.float32)
        start = 0
        while start < len(order):
            end = start + 1  # lengths ascend: the last text of a group is its longest
            while (end < len(order) and end - start < batch
                   and (end - start + 1) * len(encs[order[end]]) <= BATCH_TOKENS):
                end += 1
            idx = order[start:end]
            L = len(encs[idx[-1]])
            ids = np.zeros((len(idx), L), dtype=np.int64)
            mask = np.zeros((len(idx), L), dtype=np.float32)
            for r, i in enumerate(idx):
                ids[r, :len(encs[i])] = encs[i]
                mask[r, :len(encs[i])] = 1
            out[idx] = self._forward(ids, mask)
            start = end
        return out
