"""Overhead of the cooperative loop per turn, with a model that answers instantly.

Measures everything :meth:`PagedChat.send` does except waiting for a model:
adding the user turn, building the context (bookmarks, resident pages), one
recall round trip every ``recall_every`` turns, storing the answer, and the one
commit per turn. Conversation lengths 100 and 10,000 turns (fixed_10, LRU, k=5).

    .venv/bin/python bench/bench_loop.py [--store memory://|sqlite:///path] [--turns 100 10000]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from copage.llm.scripted import ScriptedModel
from copage.memory import PagedMemory
from copage.session import PagedChat

WORDS = [
    "budget", "allergy", "Maria", "dentist", "Rust", "hiking", "Alps", "laptop", "Zurich",
    "June", "satay", "project", "deadline", "flight", "hotel", "museum", "concert", "recipe",
    "garden", "piano",
]


def text(i: int) -> str:
    """A deterministic 20-word message."""
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(20)) + f" #{i}"


def prefill(mem: PagedMemory, n: int) -> None:
    """Fill the conversation to ``n`` turns in one transaction (fast setup)."""
    with mem.transaction():
        for i in range(n):
            mem.add("user" if i % 2 == 0 else "assistant", text(i))


def run(store: str, turns: int, measured: int, recall_every: int, speculative: bool) -> list[float]:
    """Per-turn overhead in ms for ``measured`` sends after ``turns`` prefilled turns."""
    mem = PagedMemory(store=store, boundary="fixed_10", resident_pages=5)
    prefill(mem, turns)
    model = ScriptedModel()
    chat = PagedChat(mem, model, speculative=speculative)
    out = []
    for i in range(measured):
        if i % recall_every == 0 and mem.evicted:
            model.tool_call("recall", {"page": mem.evicted[i % len(mem.evicted)]})
        model.reply("ok " + text(i))
        t0 = time.perf_counter()
        chat.send_sync(text(turns + i))
        out.append((time.perf_counter() - t0) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--turns", type=int, nargs="+", default=[100, 10_000])
    ap.add_argument("--measured", type=int, default=50)
    ap.add_argument("--recall-every", type=int, default=2)
    ap.add_argument("--store", default=None, help="store URL (default: a temp SQLite file)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'store':8} {'turns':>7} {'speculative':>11} {'median ms':>10} {'p90 ms':>8}")
        for turns in args.turns:
            for speculative in (False, True):
                for kind in ("memory", "sqlite"):
                    store = args.store or (
                        "memory://" if kind == "memory"
                        else f"sqlite:///{Path(tmp) / f'b{turns}{speculative}.db'}")
                    ms = run(store, turns, args.measured, args.recall_every, speculative)
                    p90 = statistics.quantiles(ms, n=10)[-1]
                    print(f"{kind:8} {turns:>7} {speculative!s:>11} "
                          f"{statistics.median(ms):>10.2f} {p90:>8.2f}")


if __name__ == "__main__":
    main()
