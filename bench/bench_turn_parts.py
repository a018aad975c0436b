"""The runtime's cost of one proxied turn at several conversation lengths, in one run.

What ``copage serve`` does per turn of a conversation it holds (header mode, cached):
one transaction adding the user message, building the context, adding the answer,
then the store commit (SQLite, the proxy's default store; ``--store`` for another).
One conversation per point of ``--at`` (turns, as in ``bench_proxy.py --shape full``),
grown to its point first; then their turns are timed in rotation (one turn of each in
turn, ``--window`` times), so a load change of the shared machine hits every point
alike and the ratios come from one run. Paging as the proxy bench's (``fixed_4``,
``k=2``, the library's other defaults). The turn's wall time and its CPU time (this
thread's, ``time.thread_time``: the SQLite work runs in it; less sensitive to other
processes than the wall time). Also printed per point: the bytes each commit
writes for the pager's state (snapshot plus per-page rows) and the time of
``stats()`` (called four times per proxied turn) and of re-joining the bookmark index.

    python bench/bench_turn_parts.py [--at 10,200,800] [--window 50] [--store sqlite]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import tempfile
import time
from typing import Any

from copage import PagedMemory


def text(n: int) -> str:
    return (f"turn {n}: tell me about item {n} (the code word is w{n}) and how it "
            "relates to the earlier ones")


def turn(mem: PagedMemory, n: int) -> None:
    with mem.transaction():
        mem.add("user", text(n))
        mem.context()
        mem.add("assistant", "echo: " + text(n))


def state_bytes(mem: PagedMemory) -> int:
    """Bytes of the state the last commit would write now: snapshot + per-page rows."""
    change = mem.pager.drain()  # nothing pending after a commit: measure a full one
    pager = mem.pager
    snap = json.dumps(pager.snapshot())
    rows = getattr(pager, "page_state", None)
    if rows is None:  # before per-page rows: everything was in the snapshot
        return len(snap)
    touched = [p for p in pager.resident]  # a typical commit: the pages it touched
    assert not change.turns
    return len(snap) + sum(len(json.dumps(rows(int(p[1:]) - 1))) for p in touched)


def rejoin(pager: Any) -> None:
    """Re-join the bookmark index as after a change of the evicted set."""
    pager.grouped.lines = None
    pager.bookmark_index()


def timed(fn: Any, n: int = 50) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--at", default="10,200,800")
    ap.add_argument("--window", type=int, default=50)
    ap.add_argument("--store", default="sqlite", choices=["sqlite", "memory"])
    args = ap.parse_args()
    at = [int(x) for x in args.at.split(",")]
    tmp = tempfile.mkdtemp(prefix="copage-parts-")
    store = f"sqlite://{tmp}/parts.db" if args.store == "sqlite" else "memory://"
    mems = {t: PagedMemory(store=store, conversation_id=f"c{t}", boundary="fixed_4",
                           resident_pages=2) for t in at}
    for t, mem in mems.items():
        for n in range(1, t):
            turn(mem, n)
    times: dict[int, list[float]] = {t: [] for t in at}
    cpu: dict[int, list[float]] = {t: [] for t in at}
    stats_t: dict[int, list[float]] = {t: [] for t in at}
    join_t: dict[int, list[float]] = {t: [] for t in at}
    gc.collect()
    for k in range(args.window):
        for t in (at if k % 2 else at[::-1]):
            mem = mems[t]
            t0, c0 = time.perf_counter(), time.thread_time()
            turn(mem, t + k)
            times[t].append(time.perf_counter() - t0)
            cpu[t].append(time.thread_time() - c0)
            stats_t[t].append(timed(mem.stats, 5))
            join_t[t].append(timed(lambda p=mem.pager: rejoin(p), 5))
    first = statistics.median(times[at[0]])
    first_cpu = statistics.median(cpu[at[0]])
    print("| turn | pages | turn p50 | vs first | CPU p50 | vs first | stats() | "
          "bookmark re-join | state bytes |")
    print("|---|---|---|---|---|---|---|---|---|")
    for t in at:
        p50, c50 = statistics.median(times[t]), statistics.median(cpu[t])
        print(f"| {t} | {len(mems[t].pager.pages)} | {p50 * 1e3:.2f} ms | {p50 / first:.2f}x | "
              f"{c50 * 1e3:.2f} ms | {c50 / first_cpu:.2f}x | "
              f"{statistics.median(stats_t[t]) * 1e6:.0f} us | "
              f"{statistics.median(join_t[t]) * 1e6:.0f} us | {state_bytes(mems[t])} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
