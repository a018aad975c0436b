"""Per-turn cost of the adapters as the conversation grows (issue 18: flat from 100 to 3,000).

* ``langchain``: the middleware's own work for one turn (no model): store the new user
  message and build the paged view (``_prepare``, as each model call does), then store
  the answer (``_record``, as ``after_agent`` does). ``checkpointer``: the state holds
  the stored messages (same ids); ``resent``: the caller resends its whole history as
  fresh message objects (no checkpointer); the run's state keeps them, so ``after_agent``
  gets the model call's messages and the answer.
* ``mcp-2proc``: two MCP server processes on one SQLite store, stood for by two
  :class:`ConversationPool` objects (two conversation caches) on one file: A appends a
  user/assistant pair, then B answers ``recall_page`` (page p1: an answer whose size
  does not grow), so B must catch up with A's write; the time of B's call.
* ``mcp-append``: one MCP process appending a user/assistant pair (``append_turns``).
* ``pop``: ``CopageSession.pop_item`` then ``add_items`` of the popped item back, with
  the latest item in the open page (``open``: 9 of 10 items with pages of 10) or the
  one that closed its page (``closing``: the session's latest commit is taken back;
  the two halves are printed too).

Each size is built once, then ``--turns`` measured turns; the median is printed (ms).
Run: ``PYTHONPATH=src .venv/bin/python bench/bench_adapters.py [--sizes 100,1000,3000]``.
The machine is shared: compare sizes within one run; ``--clock cpu`` times CPU time
instead of wall time (a loaded machine's preemptions inflate long calls most).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

PAGING: dict[str, Any] = {"boundary": "fixed_10", "policy": "lru", "resident_pages": 5,
                          "keywords": "heuristic"}


clock = time.perf_counter  # --clock cpu: time.process_time (this process's CPU time)


def _text(i: int) -> str:
    return (f"turn {i} about topic {i % 37}: alpha{i % 101} beta{i % 53} and the number "
            f"{i * 7} in city{i % 11}")


def _median_ms(fn: Callable[[int], float | None], start: int, turns: int) -> float:
    """Median over ``turns`` calls of ``fn`` (its own figure when it returns one)."""
    times = []
    for k in range(turns):
        gc.disable()  # as timeit does: a collection's pause belongs to no one call
        try:
            t = clock()
            own = fn(start + 2 * k)
            times.append(clock() - t if own is None else own)
        finally:
            gc.enable()
    return 1000 * statistics.median(times)


def bench_langchain(n: int, turns: int, mode: str) -> float:
    from langchain_core.messages import AIMessage, HumanMessage

    from copage.adapters.langchain import CopageMiddleware

    mw = CopageMiddleware(**PAGING)
    state: list[Any] = []
    for i in range(n):
        cls = HumanMessage if i % 2 == 0 else AIMessage
        state.append(cls(content=_text(i), id=str(uuid.uuid4())))
    mw._record("c", state)

    def fresh(msgs: list[Any]) -> list[Any]:
        return [m.model_copy(update={"id": str(uuid.uuid4())}) for m in msgs]

    def turn(i: int) -> float:
        question = HumanMessage(content=_text(i), id=str(uuid.uuid4()))
        answer = AIMessage(content=_text(i + 1), id=str(uuid.uuid4()))
        state.append(question)
        # the caller's work (not timed): a resending caller's messages are fresh objects;
        # within the run, the state keeps them (after_agent sees them and the answer)
        sent = fresh(state) if mode == "resent" else state
        t = clock()
        mw._prepare("c", sent)
        spent = clock() - t
        state.append(answer)
        sent = [*sent, answer] if mode == "resent" else state
        t = clock()
        mw._record("c", sent)
        return spent + clock() - t

    return _median_ms(turn, n, turns)


def bench_mcp(n: int, turns: int, tmp: Path) -> float:
    from copage.adapters.mcp import ConversationPool
    from copage.adapters.mcp import handlers as tools
    from copage.core.config import PagerConfig

    url = f"sqlite://{tmp / f'mcp-{n}.db'}"
    a = ConversationPool(url, PagerConfig(**PAGING))
    b = ConversationPool(url, PagerConfig(**PAGING))
    for s in range(0, n, 500):
        tools.append_turns(a, "default", "c", [("user" if i % 2 == 0 else "assistant", _text(i))
                                              for i in range(s, min(n, s + 500))])
    tools.recall_page(b, "default", "c", "p1")  # B has it cached, as a warm process would
    def turn(i: int) -> float:
        tools.append_turns(a, "default", "c", [("user", _text(i)), ("assistant", _text(i + 1))])
        t = clock()
        tools.recall_page(b, "default", "c", "p1")
        return clock() - t

    out = _median_ms(turn, n, turns)
    a.close()
    return out


def bench_mcp_append(n: int, turns: int, tmp: Path) -> float:
    """MCP ``append_turns`` of one user/assistant pair (the per-turn call of a client
    that stores its conversation through MCP), one process, SQLite."""
    from copage.adapters.mcp import ConversationPool
    from copage.adapters.mcp import handlers as tools
    from copage.core.config import PagerConfig

    pool = ConversationPool(f"sqlite://{tmp / f'mcp-append-{n}.db'}", PagerConfig(**PAGING))
    for s in range(0, n, 500):
        tools.append_turns(pool, "default", "c", [
            ("user" if i % 2 == 0 else "assistant", _text(i)) for i in range(s, min(n, s + 500))])

    def turn(i: int) -> None:
        tools.append_turns(pool, "default", "c", [("user", _text(i)), ("assistant", _text(i + 1))])

    out = _median_ms(turn, n, turns)
    pool.close()
    return out


def bench_pop(n: int, turns: int, closing: bool) -> tuple[float, float, float]:
    from copage.adapters.agents import CopageSession

    session = CopageSession("s", **PAGING)
    size = n if closing else n + 5  # with pages of 10: the n-th item closes a page

    async def run() -> tuple[float, float, float]:  # one event loop (and thread pool)
        await session.add_items([{"role": "user" if i % 2 == 0 else "assistant",
                                  "content": _text(i)} for i in range(size)])
        times: list[float] = []
        pops: list[float] = []
        adds: list[float] = []
        for _ in range(turns):
            gc.disable()
            try:
                t = clock()
                item = await session.pop_item()
                t1 = clock()
                assert item is not None
                await session.add_items([item])
                t2 = clock()
                times.append(t2 - t)
                pops.append(t1 - t)
                adds.append(t2 - t1)
            finally:
                gc.enable()
        both, pop, add = (1000 * statistics.median(x) for x in (times, pops, adds))
        return both, pop, add

    return asyncio.run(run())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="100,500,1000,2000,3000")
    ap.add_argument("--turns", type=int, default=15, help="measured turns per size")
    ap.add_argument("--only", default="langchain,langchain-resent,mcp-2proc,mcp-append,pop")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: this process's CPU time (all its threads), which other jobs "
                         "on a shared machine do not inflate")
    args = ap.parse_args()
    global clock
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    sizes = [int(s) for s in args.sizes.split(",")]
    only = args.only.split(",")
    with tempfile.TemporaryDirectory() as d:
        rows: dict[str, list[float]] = {}
        for n in sizes:
            if "langchain" in only:
                rows.setdefault("langchain (checkpointer)", []).append(
                    bench_langchain(n, args.turns, "checkpointer"))
            if "langchain-resent" in only:
                rows.setdefault("langchain (resent history)", []).append(
                    bench_langchain(n, args.turns, "resent"))
            if "mcp-2proc" in only:
                rows.setdefault("mcp, 2 processes", []).append(bench_mcp(n, args.turns, Path(d)))
            if "mcp-append" in only:
                rows.setdefault("mcp append_turns", []).append(
                    bench_mcp_append(n, args.turns, Path(d)))
            if "pop" in only:
                rows.setdefault("agents pop+add (open)", []).append(
                    bench_pop(n, args.turns, False)[0])
                both, pop, add = bench_pop(n, args.turns, True)
                rows.setdefault("agents pop+add (closing)", []).append(both)
                rows.setdefault("  of which pop", []).append(pop)
                rows.setdefault("  of which add back", []).append(add)
    print(f"{'ms per turn (median)':28}" + "".join(f"{n:>9}" for n in sizes))
    for name, vals in rows.items():
        print(f"{name:28}" + "".join(f"{v:9.2f}" for v in vals))


if __name__ == "__main__":
    main()
