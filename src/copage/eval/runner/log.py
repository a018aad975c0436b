"""Per-probe JSONL written as it goes, so an interrupted run resumes where it stopped."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

KEY_FIELDS: tuple[str, ...] = ("dataset", "conversation", "probe", "method", "model")

RowKey = tuple[str, ...]


def row_key(row: Mapping[str, Any], fields: tuple[str, ...] = KEY_FIELDS) -> RowKey:
    """The identity of a row: the values of ``fields`` as strings (``None`` -> "")."""
    return tuple("" if row.get(f) is None else str(row.get(f)) for f in fields)


class ProbeLog:
    """An append-only JSONL file of rows, keyed by ``fields``; rows already present are kept.

    A truncated last line (the process was killed while writing) is ignored with a
    warning and rewritten by the resumed run.
    """

    def __init__(self, path: str | Path, fields: tuple[str, ...] = KEY_FIELDS) -> None:
        self.path = Path(path)
        self.fields = fields
        self.rows: dict[RowKey, dict[str, Any]] = {}
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        bad = 0
        good: list[str] = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                bad += 1
                continue
            if isinstance(row, dict):
                self.rows[row_key(row, self.fields)] = row
                good.append(line)
        if bad:
            warnings.warn(f"{self.path}: ignored {bad} unreadable line(s) (interrupted write?)",
                          RuntimeWarning, stacklevel=3)
            self.path.write_text("".join(g + "\n" for g in good), encoding="utf-8")

    def __contains__(self, key: object) -> bool:
        return key in self.rows

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(list(self.rows.values()))

    def has(self, row: Mapping[str, Any]) -> bool:
        """True when a row with the same key is stored."""
        return row_key(row, self.fields) in self.rows

    def append(self, row: dict[str, Any]) -> None:
        """Store ``row`` (written and flushed at once); a key already present is an error."""
        key = row_key(row, self.fields)
        if key in self.rows:
            raise ValueError(f"duplicate row {key} in {self.path}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(row, ensure_ascii=False, sort_keys=True, default=str)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.rows[key] = row
