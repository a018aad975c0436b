"""copage.dense.EmbeddingCache with a counting fake encoder (no model needed)."""

from __future__ import annotations

import sqlite3
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from copage.dense import EmbeddingCache


class Counting:
    """Deterministic fake vectors; records every batch it is asked to encode."""

    def __init__(self, name: str = "fake", dim: int = 4) -> None:
        self.name, self.dim = name, dim
        self.calls: list[list[str]] = []

    def encode(self, texts: Sequence[str], batch: int = 32) -> np.ndarray:
        self.calls.append(list(texts))
        out = np.array([[len(t), sum(map(ord, t)) % 97, i, 1.0] for i, t in enumerate(texts)],
                       dtype=np.float32)[:, :self.dim]
        return out.reshape(len(texts), self.dim)


def _expected(texts: Sequence[str]) -> np.ndarray:
    return np.array([[len(t), sum(map(ord, t)) % 97] for t in texts], dtype=np.float32)


def test_rows_in_order_one_batch_for_the_missing(tmp_path: Path) -> None:
    enc = Counting()
    cache = EmbeddingCache(enc)
    first = cache.vectors(["a", "bb", "a"])
    assert first.dtype == np.float32 and first.shape == (3, 4)
    np.testing.assert_array_equal(first[:, :2], _expected(["a", "bb", "a"]))
    np.testing.assert_array_equal(first[0], first[2])
    assert enc.calls == [["a", "bb"]]
    again = cache.vectors(["bb", "ccc", "a"])
    assert enc.calls[1:] == [["ccc"]]
    np.testing.assert_array_equal(again[0], first[1])
    assert cache.vectors([]).shape == (0, 4)
    assert len(enc.calls) == 2


def test_memory_is_bounded_least_recently_used_first() -> None:
    enc = Counting()
    cache = EmbeddingCache(enc, memory=2)
    cache.vectors(["a", "b"])
    cache.vectors(["a"])  # a is now the most recent
    cache.vectors(["c"])  # b goes
    assert len(cache) == 2
    cache.vectors(["a", "c"])
    assert enc.calls[-1] == ["c"]
    cache.vectors(["b"])
    assert enc.calls[-1] == ["b"]


def test_the_key_includes_the_encoder_name() -> None:
    a, b = EmbeddingCache(Counting("m1")), EmbeddingCache(Counting("m2"))
    assert a.key("text") != b.key("text")
    assert a.key("text") == EmbeddingCache(Counting("m1")).key("text")
    assert a.key("a\0b") != a.key("a\0c")


def test_a_restarted_process_reads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    first = EmbeddingCache(Counting(), path)
    v = first.vectors(["one", "two"])
    first.close()
    enc = Counting()
    second = EmbeddingCache(enc, path)
    np.testing.assert_array_equal(second.vectors(["two", "one"]), v[::-1])
    assert enc.calls == []
    other = Counting("another-model")
    EmbeddingCache(other, path).vectors(["one"])
    assert other.calls == [["one"]]


def test_a_row_of_the_wrong_size_is_encoded_again(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    cache = EmbeddingCache(Counting(), path)
    cache.vectors(["x"])
    cache.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE embeddings SET vec = ?", (b"\0" * 12,))
    enc = Counting()
    again = EmbeddingCache(enc, path)
    np.testing.assert_array_equal(again.vectors(["x"])[0, :2], _expected(["x"])[0])
    assert enc.calls == [["x"]]
    again.close()
    with sqlite3.connect(path) as db:
        assert [len(r[0]) for r in db.execute("SELECT vec FROM embeddings")] == [16]


def test_a_corrupt_file_warns_once_and_answers_anyway(tmp_path: Path) -> None:
    path = tmp_path / "emb.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    enc = Counting()

    def use() -> tuple[EmbeddingCache, np.ndarray]:
        cache = EmbeddingCache(enc, path)
        v = cache.vectors(["a", "b"])
        cache.vectors(["c"])
        return cache, v

    with pytest.warns(RuntimeWarning, match=r"emb\.sqlite is unusable") as caught:
        cache, v = use()
    assert len(caught) == 1
    np.testing.assert_array_equal(v[:, :2], _expected(["a", "b"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(cache.vectors(["a"]), v[:1])


def test_a_file_that_fails_later_warns_once(tmp_path: Path) -> None:
    cache = EmbeddingCache(Counting(), tmp_path / "emb.sqlite")
    cache.vectors(["a"])
    assert cache._db is not None
    cache._db.execute("DROP TABLE embeddings")

    def use() -> None:
        cache.vectors(["b"])
        cache.vectors(["c"])

    with pytest.warns(RuntimeWarning, match="no such table") as caught:
        use()
    assert len(caught) == 1


def test_an_encoder_of_the_wrong_shape_is_named() -> None:
    class Short(Counting):
        def encode(self, texts: Sequence[str], batch: int = 32) -> np.ndarray:
            return np.zeros((1, 4), np.float32)
    with pytest.raises(ValueError, match=r"'fake' returned shape \(1, 4\) for 2 texts"):
        EmbeddingCache(Short()).vectors(["a", "b"])


def test_threads_share_one_cache(tmp_path: Path) -> None:
    cache = EmbeddingCache(Counting(), tmp_path / "emb.sqlite", memory=50)
    texts = [f"t{i}" for i in range(200)]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for s in range(0, 200, 7):
                chunk = texts[(s + k) % 200:(s + k) % 200 + 9]
                np.testing.assert_array_equal(cache.vectors(chunk)[:, :2], _expected(chunk))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(cache) <= 50


def test_ranker_goes_on_in_memory_when_the_cache_folder_cannot_be_made(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ranker(cache=True)`` under an unwritable cache home: one warning, no error."""
    from copage import dense

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # its 'copage' folder cannot be made
    monkeypatch.setattr(dense, "load_encoder", lambda model=None: Counting())
    with pytest.warns(RuntimeWarning, match="embedding cache file"):
        r = dense.ranker(cache=True)
    assert r.encoder.vectors(["a b"]).shape == (1, 4)  # type: ignore[attr-defined]
