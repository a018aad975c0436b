"""Embeddings by text, kept in memory and optionally in a SQLite file.

A long chat is embedded once: a restarted process reads the vectors back from the file
instead of running the encoder again. The file is an optimisation only; when it cannot
be read or written the cache warns once and goes on in memory, so answering never
depends on it.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from copage.sqlite_wal import enable_wal

__all__ = ["EmbeddingCache", "Encoder"]

_SCHEMA = "CREATE TABLE IF NOT EXISTS embeddings (key BLOB PRIMARY KEY, vec BLOB NOT NULL)"
_T = TypeVar("_T")
_CHUNK = 500
"""Keys per ``SELECT ... IN (...)`` (below SQLite's variable limit)."""


class Encoder(Protocol):
    """What the cache needs of an encoder (:class:`copage.dense.MiniLM` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


class EmbeddingCache:
    """``encoder``'s embeddings of texts, each computed once.

    Args:
        encoder: gives ``name``, ``dim`` and ``encode(texts) -> (n, dim)`` float32.
        path: a SQLite file to keep the vectors across processes (None: memory only).
        memory: how many vectors to hold in memory; the least recently used go first.
    """

    def __init__(self, encoder: Encoder, path: str | os.PathLike[str] | None = None, *,
                 memory: int = 50_000) -> None:
        if memory < 0:
            raise ValueError(f"memory must be 0 or more, got {memory}")
        self.encoder = encoder
        self.dim = int(encoder.dim)
        self.path = None if path is None else os.fspath(path)
        self.memory = memory
        self._mem: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._prefix = f"{encoder.name}\0".encode()
        if self.path is not None:
            self._guard(self._open, self.path)

    def _open(self, path: str) -> None:
        db = sqlite3.connect(path, timeout=30.0, check_same_thread=False)
        try:
            enable_wal(db)
            db.execute(_SCHEMA)
            db.commit()
        except BaseException:
            db.close()
            raise
        self._db = db

    def _guard(self, fn: Callable[..., _T], *args: Any) -> _T | None:
        """Run a file operation; on a database error, warn once and drop the file."""
        try:
            return fn(*args)
        except sqlite3.Error as e:
            self._drop_file(e)
            return None

    def _drop_file(self, error: Exception) -> None:
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
        self._db = None
        warnings.warn(f"embedding cache file {self.path} is unusable ({error}); going on "
                      "without it (embeddings are computed again in each process)",
                      RuntimeWarning, stacklevel=3)

    def key(self, text: str) -> bytes:
        """blake2b of the encoder's name, a NUL and the text."""
        return hashlib.blake2b(self._prefix + text.encode("utf-8", "surrogatepass"),
                               digest_size=16).digest()

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """The embedding of each text, rows in the order of ``texts`` (float32,
        ``(len(texts), dim)``); texts found neither in memory nor in the file are
        encoded in one call and kept."""
        if isinstance(texts, str):
            raise TypeError("vectors takes a sequence of texts, not one str")
        keys = [self.key(t) for t in texts]
        out = np.zeros((len(keys), self.dim), dtype=np.float32)
        with self._lock:
            found = self._from_memory(keys)
            wanted = [k for k in dict.fromkeys(keys) if k not in found]
            if wanted and self._db is not None:
                from_file = self._guard(self._from_file, wanted)
                if from_file:
                    found.update(from_file)
                    self._remember(from_file)
        todo: dict[bytes, str] = {}
        for k, t in zip(keys, texts):
            if k not in found:
                todo.setdefault(k, t)
        if todo:
            fresh = np.asarray(self.encoder.encode(list(todo.values())), dtype=np.float32)
            if fresh.shape != (len(todo), self.dim):
                raise ValueError(f"encoder {self.encoder.name!r} returned shape {fresh.shape} "
                                 f"for {len(todo)} texts, expected ({len(todo)}, {self.dim})")
            new = {k: fresh[i].copy() for i, k in enumerate(todo)}
            found.update(new)
            with self._lock:
                self._remember(new)
                if self._db is not None:
                    self._guard(self._store, new)
        for i, k in enumerate(keys):
            out[i] = found[k]
        return out

    def _from_memory(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        for k in keys:
            v = self._mem.get(k)
            if v is not None:
                self._mem.move_to_end(k)
                found[k] = v
        return found

    def _from_file(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        assert self._db is not None
        size = self.dim * 4
        found: dict[bytes, np.ndarray] = {}
        for s in range(0, len(keys), _CHUNK):
            chunk = keys[s:s + _CHUNK]
            rows = self._db.execute(
                f"SELECT key, vec FROM embeddings WHERE key IN ({','.join('?' * len(chunk))})",
                chunk).fetchall()
            for k, vec in rows:
                if isinstance(vec, bytes) and len(vec) == size:  # else: encoded again
                    found[bytes(k)] = np.frombuffer(vec, dtype="<f4").astype(np.float32)
        return found

    def _store(self, new: dict[bytes, np.ndarray]) -> None:
        assert self._db is not None
        with self._db:
            self._db.executemany("INSERT OR REPLACE INTO embeddings (key, vec) VALUES (?, ?)",
                                 [(k, v.astype("<f4").tobytes()) for k, v in new.items()])

    def _remember(self, vecs: dict[bytes, np.ndarray]) -> None:
        if self.memory == 0:
            return
        for k, v in vecs.items():
            self._mem[k] = v
            self._mem.move_to_end(k)
        while len(self._mem) > self.memory:
            self._mem.popitem(last=False)

    def __len__(self) -> int:
        """Vectors held in memory."""
        return len(self._mem)

    def close(self) -> None:
        """Close the file (the memory part stays usable)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
