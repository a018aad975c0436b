"""Cost of paging vs full context, with caching priced, at every length of a long chat.

The LoCoMo conversations of the given files are concatenated (in file order, again
from the first when they run out) into one chat of ``--turns`` turns; in each
conversation its first speaker is the user. Every user message is sent through
``PagedChat`` in its default recall mode (a scripted model answers with the other
speaker's next turn), as a chat app or the proxy would send it, so what is metered is
what each request carried: the fill included. The pager's prompt meter
(:mod:`copage.core.promptcache`) prices every request as sent and beside it the whole
conversation sent each turn (full context), both with caching priced at
gpt-4o-mini, claude-haiku-4-5 and claude-sonnet-4-5 prices.

For each paging setting it prints, per price, the worst ratio of copage's cumulative
cost to full context's over every length from ``--from`` to ``--turns`` turns (the
costs of the requests sent within the first n turns), the length where it is worst
and the ratio at the last length ("= 1": never above 1, as while nothing is evicted
the requests are full context's, to 1e-9), preceded by the cost ratio of the first
eviction batch's request alone (the margin: the one request that may cost more); then the turn of the first eviction, the
conversation's tokens then, the evictions, the turns with a fill, and ``kept``: the
mean share of the conversation's turns that a request shows (resident and open
pages; the fill not counted), over the requests after the first eviction.

Run (settings are ``budget_tokens:budget_floor`` pairs, ``pages:K`` for
``resident_pages=K``, or ``default``)::

    .venv/bin/python bench/bench_budget_cost.py ../shared/data/locomo/locomo-sample.json \\
        ../shared/data/locomo/locomo-more.json --turns 10000 default pages:4 32000:8000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from copage import PagedMemory
from copage.core.promptcache import PRICES
from copage.core.types import Turn, page_index
from copage.llm.scripted import ScriptedModel
from copage.session import PagedChat

MODELS = tuple(PRICES)


@dataclass(frozen=True, slots=True)
class ChatTurn:
    """One turn of the concatenated chat: its role and metadata as sent."""

    role: str
    text: str
    speaker: str | None
    timestamp: str | None
    session: int


def long_chat(conversations: Sequence[Sequence[Turn]], n: int) -> list[ChatTurn]:
    """The first ``n`` turns of the conversations concatenated (cycled); sessions are
    numbered on across conversations so that each one opens new sessions."""
    if not any(conversations):
        raise ValueError("no turns in the given files")
    out: list[ChatTurn] = []
    offset = 0

    def cycle() -> Iterator[Sequence[Turn]]:
        while True:
            yield from conversations

    for turns in cycle():
        if len(out) >= n:
            break
        first = turns[0].speaker or turns[0].role
        top = 0
        for t in turns:
            role = "user" if (t.speaker or t.role) == first else "assistant"
            session = offset + (t.session or 1)
            top = max(top, session)
            out.append(ChatTurn(role, t.text, t.speaker, t.timestamp, session))
        offset = top
    return out[:n]


@dataclass(frozen=True, slots=True)
class Run:
    """Cumulative costs after each request and the paging figures of one setting."""

    turns_at: list[int]  # turns of the chat consumed after each request
    paged: dict[str, list[float]]  # model -> cumulative copage cost after each request
    full: dict[str, list[float]]  # model -> cumulative full-context cost
    first_eviction: int | None  # the turn (1-based) whose request was the first paged
    tokens_then: int  # full context's tokens in that request
    evictions: int
    filled: int
    kept: float  # mean share of the chat's turns shown (resident + open), once paging
    seconds: float


def settings_of(name: str) -> dict[str, Any]:
    """PagedMemory settings of ``default``, ``pages:K`` or ``H:L``."""
    if name == "default":
        return {}
    head, _, tail = name.partition(":")
    if head == "pages":
        return {"resident_pages": int(tail)}
    return {"budget_tokens": int(head), "budget_floor": int(tail)}


def run(chat: Sequence[ChatTurn], settings: dict[str, Any]) -> Run:
    """Send the chat through ``PagedChat`` with these paging settings."""
    start = time.perf_counter()
    mem = PagedMemory(**settings)
    model = ScriptedModel()
    session = PagedChat(mem, model)
    meter = mem.pager.prompt_meter
    turns_at: list[int] = []
    paged: dict[str, list[float]] = {m: [] for m in MODELS}
    full: dict[str, list[float]] = {m: [] for m in MODELS}
    first, tokens_then, filled, shown, shown_n = None, 0, 0, 0.0, 0
    i, last = 0, (0, 0)
    while i < len(chat):
        turn = chat[i]
        meta = {"speaker": turn.speaker, "timestamp": turn.timestamp, "session": turn.session}
        if turn.role != "user":  # an assistant turn no user turn preceded
            mem.add("assistant", turn.text, **meta)
            i += 1
            continue
        nxt = chat[i + 1] if i + 1 < len(chat) else None
        answered = nxt is not None and nxt.role == "assistant"
        model.reply(nxt.text if answered and nxt is not None else "ok")
        report = session.send_sync(turn.text, **meta)
        model.requests.clear()  # only the meter's figures are needed
        filled += bool(report.speculative)
        pager = mem.pager
        sent, full_now = meter.prompt_tokens - last[0], meter.full_tokens - last[1]
        if sent != full_now and first is None:  # not full context's request: paged
            first, tokens_then = i + 1, full_now
        if first is not None:
            shown_turns = sum(len(pager.pages[page_index(p)].turns) for p in pager.resident)
            shown += (shown_turns + len(pager.open_turns)) / len(pager.turns)
            shown_n += 1
        i += 2 if answered else 1
        last = (meter.prompt_tokens, meter.full_tokens)
        turns_at.append(i)
        for m in MODELS:
            paged[m].append(meter.cost[m]["paged_cached"])
            full[m].append(meter.cost[m]["full_cached"])
    return Run(turns_at, paged, full, first, tokens_then, mem.pager.counters.evictions,
               filled, shown / shown_n if shown_n else 1.0, time.perf_counter() - start)


def worst(r: Run, model: str, lo: int) -> tuple[float, int, float]:
    """(worst ratio, its length, ratio at the last length) of cumulative copage to full
    cost over every length n >= ``lo`` turns (requests sent within the first n turns)."""
    best = (0.0, 0)
    lo = max(lo, 1)
    last = 0.0
    j = -1
    n_max = r.turns_at[-1]
    for n in range(lo, n_max + 1):
        while j + 1 < len(r.turns_at) and r.turns_at[j + 1] <= n:
            j += 1
        if j < 0:
            continue
        ratio = r.paged[model][j] / r.full[model][j] if r.full[model][j] else 1.0
        if ratio > best[0]:
            best = (ratio, n)
        last = ratio
    return best[0], best[1], last


def main() -> None:
    from copage.eval.datasets import load_dataset

    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("items", nargs="+", metavar="FILE.json|SETTING",
                    help="LoCoMo files, then settings (default: default)")
    ap.add_argument("--turns", type=int, default=10_000)
    ap.add_argument("--from", dest="lo", type=int, default=10)
    ap.add_argument("--start", type=int, default=0,
                    help="begin with this conversation (0-based; a check of the order)")
    args = ap.parse_intermixed_args()
    files = [f for f in args.items if f.endswith(".json")]
    names = [s for s in args.items if not s.endswith(".json")] or ["default"]
    convs = [c.turns for f in files for c in load_dataset(f, seed=0).conversations]
    convs = convs[args.start % len(convs):] + convs[:args.start % len(convs)]
    chat = long_chat(convs, args.turns)
    print(f"{len(chat)} turns ({len(convs)} LoCoMo conversations concatenated, cycled), "
          f"from conversation {args.start}, a request per user message through PagedChat "
          f"(default recall mode); "
          f"worst cumulative cost ratio copage / full context (cached) over lengths "
          f"{args.lo}..{len(chat)} turns")
    print(f"{'setting':16s} " + " ".join(f"{m + ' worst@n (last)':>30s}" for m in MODELS)
          + f" {'1st evict':>9s} {'tokens':>7s} {'evictions':>9s} {'filled':>6s} {'kept':>5s}"
          f" {'s':>5s}")
    for name in names:
        r = run(chat, settings_of(name))
        cells = []
        for m in MODELS:
            w, at, last = worst(r, m, args.lo)
            # exactly 1 while nothing is evicted (the same requests): shown as "= 1"
            cells.append(("= 1" if w <= 1 + 1e-9 else f"{w:.4f}@{at}") + f" ({last:.3f})")
            if r.first_eviction is not None:  # the margin: the first batch's request alone
                j = r.turns_at.index(next(t for t in r.turns_at if t > r.first_eviction - 1))
                one = ((r.paged[m][j] - r.paged[m][j - 1]) / (r.full[m][j] - r.full[m][j - 1])
                       if j else 1.0)
                cells[-1] = f"{one:.2f} " + cells[-1]
        print(f"{name:16s} " + " ".join(f"{c:>30s}" for c in cells)
              + f" {r.first_eviction or '-':>9} {r.tokens_then:7d} {r.evictions:9d}"
              f" {r.filled:6d} {r.kept:5.2f} {r.seconds:5.0f}", flush=True)


if __name__ == "__main__":
    main()
