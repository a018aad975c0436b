"""Plain-stderr progress bars for ``copage bench``: done/total, ETA, calls, cache hits, cost.

No terminal library: on a TTY the line is redrawn with ``\\r``; otherwise a line is
printed every ``every`` percent so logs stay short. The clock is passed in.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO


def format_seconds(seconds: float) -> str:
    """``75.2`` -> ``"1:15"``; ``3700`` -> ``"1:01:40"``."""
    s = max(0, round(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


@dataclass(slots=True)
class Task:
    """One bar: ``done`` of ``total`` units since ``started``."""

    name: str
    total: int
    started: float
    done: int = 0
    last_printed: int = -1


@dataclass(slots=True)
class Progress:
    """Progress of a benchmark run; counters are shared by all tasks.

    Attributes:
        calls: model calls made so far; cache_hits: answered from the response cache;
        cost: dollars so far (None while unknown).
    """

    stream: TextIO | None = None
    clock: Callable[[], float] = time.monotonic
    enabled: bool = True
    every: int = 10
    calls: int = 0
    cache_hits: int = 0
    cost: float | None = None
    tasks: list[Task] = field(default_factory=list)

    def start(self, name: str, total: int) -> Task:
        """Begin a bar of ``total`` units."""
        task = Task(name, max(0, total), self.clock())
        self.tasks.append(task)
        self._draw(task)
        return task

    def advance(self, task: Task, n: int = 1, *, calls: int = 0, cache_hits: int = 0,
                cost: float | None = None) -> None:
        """Count ``n`` finished units (and model calls, cache hits, cost)."""
        task.done = min(task.total, task.done + n) if task.total else task.done + n
        self.calls += calls
        self.cache_hits += cache_hits
        if cost is not None:
            self.cost = (self.cost or 0.0) + cost
        self._draw(task)

    def finish(self, task: Task) -> None:
        """Close a bar (prints its final line)."""
        task.done = max(task.done, task.total)
        self._draw(task, final=True)

    def line(self, task: Task) -> str:
        """The text of a bar, e.g. ``paging [#####-----] 5/10 50% ETA 0:04 calls 3 cache 1 $0.0010``."""
        frac = task.done / task.total if task.total else 1.0
        width = 20
        fill = int(frac * width)
        elapsed = self.clock() - task.started
        eta = elapsed / task.done * (task.total - task.done) if task.done else None
        parts = [f"{task.name} [{'#' * fill}{'-' * (width - fill)}] {task.done}/{task.total}",
                 f"{frac:.0%}", f"elapsed {format_seconds(elapsed)}",
                 f"ETA {format_seconds(eta) if eta is not None else '?'}"]
        if self.calls or self.cache_hits:
            parts.append(f"calls {self.calls} cache {self.cache_hits}")
        if self.cost is not None:
            parts.append(f"${self.cost:.4f}")
        return " ".join(parts)

    def _draw(self, task: Task, final: bool = False) -> None:
        if not self.enabled:
            return
        out = self.stream if self.stream is not None else sys.stderr
        tty = bool(getattr(out, "isatty", lambda: False)())
        pct = int(100 * task.done / task.total) if task.total else 100
        if tty:
            out.write("\r" + self.line(task) + ("\n" if final else ""))
        elif final or task.last_printed < 0 or pct >= task.last_printed + self.every:
            if final and task.last_printed == pct and pct == 100:
                return
            out.write(self.line(task) + "\n")
            task.last_printed = pct
        out.flush()
