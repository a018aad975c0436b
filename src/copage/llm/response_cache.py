"""On-disk response cache (SQLite, WAL) and the :class:`CachedModel` wrapper.

The key is the sha256 of the canonical JSON of the model spec (which never holds
a key) and the full request. Corrupt entries are ignored with a warning and
overwritten. Several processes may write at once (WAL + busy timeout).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import warnings
from collections.abc import AsyncIterator
from pathlib import Path

from copage.llm.model_types import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    StreamEvent,
    fallback_stream,
)
from copage.llm.model_types import stream as stream_of
from copage.llm.wrapper import ModelWrapper
from copage.sqlite_wal import enable_wal

ENV_DIR = "COPAGE_CACHE_DIR"


def default_cache_path() -> Path:
    """``$COPAGE_CACHE_DIR/responses.sqlite`` or ``~/.cache/copage/responses.sqlite``."""
    base = os.environ.get(ENV_DIR)
    root = Path(base) if base else Path.home() / ".cache" / "copage"
    return root / "responses.sqlite"


def request_key(spec: str, request: ChatRequest) -> str:
    """sha256 hex of the canonical JSON of ``spec`` and ``request``."""
    data = {"v": 1, "model": spec, **request.to_json()}
    try:
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise ValueError(f"request is not JSON-serialisable, cannot cache it: {e}") from None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseCache:
    """A SQLite table ``key -> response JSON``."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, timeout=30.0, check_same_thread=False, isolation_level=None
        )
        self._db.execute("PRAGMA busy_timeout=30000")
        enable_wal(self._db, timeout=30.0)
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, spec TEXT NOT NULL,"
            " response TEXT NOT NULL, created REAL NOT NULL)"
        )

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"

    def get(self, key: str) -> ChatResponse | None:
        """The cached response, or None (also for a corrupt entry, with a warning)."""
        with self._lock:
            row = self._db.execute("SELECT response FROM responses WHERE key=?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return ChatResponse.from_json(json.loads(row[0])).with_(cached=True)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            warnings.warn(
                f"ignoring corrupt cache entry {key[:12]} in {self.path}: {e}",
                RuntimeWarning,
                stacklevel=2,
            )
            return None

    def put(self, key: str, spec: str, response: ChatResponse) -> None:
        """Store (or replace) a response."""
        text = json.dumps(response.to_json(), ensure_ascii=False)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                (key, spec, text, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()


class CachedModel(ModelWrapper):
    """Serves repeated identical requests from a :class:`ResponseCache`.

    Set ``enabled = False`` to bypass the cache (nothing read or written).
    """

    def __init__(self, inner: ChatModel, cache: ResponseCache, *, enabled: bool = True) -> None:
        super().__init__(inner)
        self.cache, self.enabled = cache, enabled

    def __repr__(self) -> str:
        return f"CachedModel({self.inner!r}, {self.cache!r})"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """A cached response (``cached=True``) or the inner model's, then stored."""
        if not self.enabled:
            return await self.inner.complete(request)
        key = request_key(self.spec, request)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        response = await self.inner.complete(request)
        self.cache.put(key, self.spec, response)
        return response

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """A hit streams as one chunk; a miss streams from the inner model and is stored."""
        key = request_key(self.spec, request) if self.enabled else ""
        hit = self.cache.get(key) if self.enabled else None
        if hit is not None:
            async for event in fallback_stream(_Fixed(hit, self.spec), request):
                yield event
            return
        async for event in stream_of(self.inner, request):
            if event.response is not None and self.enabled:
                self.cache.put(key, self.spec, event.response)
            yield event


class _Fixed:
    """A model that always returns one response (to stream a cache hit)."""

    def __init__(self, response: ChatResponse, spec: str) -> None:
        self.response, self._spec = response, spec

    @property
    def name(self) -> str:
        return self.response.model

    @property
    def spec(self) -> str:
        return self._spec

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return self.response
