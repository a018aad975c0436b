"""The one append-only JSON Lines log of every model-driven experiment.

Each row is one JSON object on one line, keyed by some of its fields. A run
appends a row as soon as it has it (written with one ``write`` on an ``O_APPEND``
descriptor, then fsync'ed), so an interrupted run loses at most the row being
written. Opening the log again:

* repairs a half-written last line (the process was killed mid-write): the
  partial bytes are cut off, with a warning, so the next row starts on a line of
  its own instead of being glued onto them;
* drops complete lines that are not JSON objects (warned);
* keeps the *last* row of each key: a conversation that is asked again (paging
  runs replay whole conversations) or a row updated with a new judge's verdict
  replaces the older row. Duplicates and dropped lines are compacted away with
  an atomic rewrite, so ``len(log)`` is the number of distinct keys and the file
  holds exactly what is counted.

Values are written as strict JSON: NaN and infinities become ``null``.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from copage.eval.jsonsafe import dumps

KEY_FIELDS: tuple[str, ...] = ("dataset", "conversation", "probe", "method", "model", "config")
"""The key of ``main``/``judges`` rows; ``config`` fingerprints the prompt settings."""

RowKey = tuple[str, ...]


def row_key(row: Mapping[str, Any], fields: tuple[str, ...] = KEY_FIELDS) -> RowKey:
    """The identity of a row: the values of ``fields`` as strings (``None`` -> "")."""
    return tuple("" if row.get(f) is None else str(row.get(f)) for f in fields)


class LogRepairWarning(RuntimeWarning):
    """The log had a half-written or unreadable line, or duplicate rows; it was repaired."""


class JsonlLog:
    """An append-only JSONL file of rows keyed by ``fields`` (the last row of a key wins).

    Attributes:
        path: the file.
        fields: the key fields.
        repaired: what opening it fixed: ``partial`` (bytes of a half-written last
            line cut off), ``unreadable`` (complete lines dropped), ``duplicates``
            (older rows of a key dropped).
    """

    def __init__(self, path: str | Path, fields: tuple[str, ...] = KEY_FIELDS) -> None:
        self.path = Path(path)
        self.fields = fields
        self.rows: dict[RowKey, dict[str, Any]] = {}
        self.repaired = {"partial": 0, "unreadable": 0, "duplicates": 0}
        if self.path.exists():
            self._load()

    # ------------------------------------------------------------------ reading
    def _load(self) -> None:
        data = self.path.read_bytes()
        cut = data.rfind(b"\n") + 1
        if cut < len(data):  # a last line without its newline: killed mid-write
            self.repaired["partial"] = len(data) - cut
            data = data[:cut]
            with self.path.open("r+b") as f:
                f.truncate(cut)
                f.flush()
                os.fsync(f.fileno())
        lines = 0
        for raw in data.split(b"\n"):
            if not raw.strip():
                continue
            lines += 1
            try:
                row = json.loads(raw)
            except ValueError:
                row = None
            if not isinstance(row, dict):
                self.repaired["unreadable"] += 1
                continue
            key = row_key(row, self.fields)
            self.rows.pop(key, None)  # re-insert: order of the latest write
            self.rows[key] = row
        self.repaired["duplicates"] = lines - self.repaired["unreadable"] - len(self.rows)
        if any(self.repaired.values()):
            what = ", ".join(f"{k} {v}" for k, v in self.repaired.items() if v)
            warnings.warn(f"{self.path}: repaired ({what}); {len(self.rows)} rows kept",
                          LogRepairWarning, stacklevel=3)
            if self.repaired["unreadable"] or self.repaired["duplicates"]:
                self.compact()

    def __contains__(self, key: object) -> bool:
        return key in self.rows

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(list(self.rows.values()))

    def has(self, row: Mapping[str, Any]) -> bool:
        """True when a row with the same key is stored."""
        return row_key(row, self.fields) in self.rows

    def get(self, row: Mapping[str, Any]) -> dict[str, Any] | None:
        """The stored row with the key of ``row``, if any."""
        return self.rows.get(row_key(row, self.fields))

    # ------------------------------------------------------------------ writing
    def append(self, row: dict[str, Any]) -> None:
        """Write ``row`` at once (one write, fsync'ed); it replaces a row with the same key."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = (dumps(row, sort_keys=True) + "\n").encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        finally:
            os.close(fd)
        key = row_key(row, self.fields)
        self.rows.pop(key, None)
        self.rows[key] = json.loads(data)  # what a reader of the file gets back

    def compact(self) -> None:
        """Rewrite the file with one line per key (atomically: temp file, then rename)."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for row in self.rows.values():
                f.write(dumps(row, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


ProbeLog = JsonlLog
"""The name used by the probe runner (``main``, ``judges``)."""
