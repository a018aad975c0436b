"""copage.dense.tensor_file: safetensors files written here, good and damaged."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from copage.dense.tensor_file import read_safetensors


def _write(path: Path, tensors: dict[str, tuple[str, list[int], bytes]]) -> bytes:
    head: dict[str, object] = {"__metadata__": {"format": "pt"}}
    data, at = b"", 0
    for name, (dtype, shape, raw) in tensors.items():
        head[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + len(raw)]}
        data, at = data + raw, at + len(raw)
    h = json.dumps(head).encode()
    blob = struct.pack("<Q", len(h)) + h + data
    path.write_bytes(blob)
    return blob


def _good(path: Path) -> bytes:
    a = np.arange(6, dtype="<f4").reshape(2, 3) / 4
    ids = np.array([7, -1, 300], dtype="<i8")
    bf16 = (np.array([1.5, -2.0], dtype="<f4").view("<u4") >> 16).astype("<u2")
    return _write(path, {"a": ("F32", [2, 3], a.tobytes()), "ids": ("I64", [3], ids.tobytes()),
                         "b": ("BF16", [2], bf16.tobytes()),
                         "h": ("F16", [1, 2], np.array([0.5, 2], "<f2").tobytes())})


def test_reads_each_dtype(tmp_path: Path) -> None:
    p = tmp_path / "t.safetensors"
    _good(p)
    got = read_safetensors(p)
    assert set(got) == {"a", "ids", "b", "h"}
    np.testing.assert_array_equal(got["a"], np.arange(6, dtype=np.float32).reshape(2, 3) / 4)
    np.testing.assert_array_equal(got["ids"], [7, -1, 300])
    assert got["b"].dtype == np.float32
    np.testing.assert_array_equal(got["b"], [1.5, -2.0])
    assert got["h"].shape == (1, 2) and got["h"].dtype == np.float16


@pytest.mark.parametrize("cut", [0, 5, 8, 20, -1, -7])
def test_a_truncated_file_is_named(tmp_path: Path, cut: int) -> None:
    p = tmp_path / "cut.safetensors"
    blob = _good(p)
    p.write_bytes(blob[:cut])
    with pytest.raises(ValueError, match=r"cut\.safetensors: not a valid safetensors"):
        read_safetensors(p)


def _with_header(path: Path, header: bytes, data: bytes = b"") -> None:
    path.write_bytes(struct.pack("<Q", len(header)) + header + data)


@pytest.mark.parametrize(("header", "why"), [
    (b"{not json", "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (b'{"x": {"dtype": "F32", "shape": [2]}}', "lacks dtype, shape or data_offsets"),
    (b'{"x": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 4]}}', "unknown dtype 'Q7'"),
    (b'{"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}', "8 bytes for shape"),
    (b'{"x": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}}', "bad data_offsets"),
])
def test_a_malformed_header_is_named(tmp_path: Path, header: bytes, why: str) -> None:
    p = tmp_path / "bad.safetensors"
    _with_header(p, header, b"\0" * 8)
    with pytest.raises(ValueError, match="bad.safetensors") as e:
        read_safetensors(p)
    assert why in str(e.value)


def test_a_huge_announced_header_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "huge.safetensors"
    p.write_bytes(struct.pack("<Q", 1 << 62) + b"{}")
    with pytest.raises(ValueError, match="header of"):
        read_safetensors(p)
