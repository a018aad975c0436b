"""Helpers shared by the store tests (a unique module name: conftest is not importable safely)."""

from __future__ import annotations

import os

from copage.stores import PageStore, open_store

PG_URL = os.environ.get("COPAGE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


class StoreFactory:
    """Opens store objects on one database; ``url`` lets child processes open it too."""

    def __init__(self, kind: str, url: str) -> None:
        self.kind, self.url = kind, url
        self._opened: list[PageStore] = []
        self._memory: PageStore | None = None

    def open(self) -> PageStore:
        """A new store object on the same data (the same object for memory)."""
        if self.kind == "memory":
            if self._memory is None:
                self._memory = open_store(self.url)
            return self._memory
        store = open_store(self.url)
        self._opened.append(store)
        return store

    @property
    def persistent(self) -> bool:
        return self.kind != "memory"

    def close_all(self) -> None:
        for s in self._opened:
            s.close()
