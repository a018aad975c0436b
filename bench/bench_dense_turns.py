"""What the meaning channel costs per turn: PagedChat turns with and without it.

A chat of ``--history`` LoCoMo turns is stored (``PagedMemory.add``, the defaults but
for ``--budget-tokens`` so that pages are evicted), then ``--turns`` more user turns
are sent through ``PagedChat`` with a scripted model (a test tool that answers with
the chat's next turn: no model time is measured), every other one a question. Each
configuration runs on its own copy of the chat, alternated ``--rounds`` times in one
process (machines are shared: compare the ratio, not the seconds). Reported: the
first question's time (``cold``: every closed turn embedded then, no cache file; the
default without the channel), then per-turn p50 / p95 / mean of the following turns.

Run::

    OPENBLAS_NUM_THREADS=2 PYTHONPATH=src python bench/bench_dense_turns.py \\
        ../shared/data/locomo/locomo-sample.json ../shared/data/locomo/locomo-more.json
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

from copage import FillSettings, PagedChat, PagedMemory
from copage.eval.datasets import load_dataset
from copage.eval.paraphrase import Line, lines_of_conversations
from copage.llm.scripted import ScriptedModel


def run(lines: Sequence[Line], history: int, turns: int, budget: int,
        fill: FillSettings) -> tuple[float, list[float]]:
    mem = PagedMemory(budget_tokens=budget, budget_floor=budget // 2)
    for line in lines[:history]:
        mem.add(line.role, line.text)
    model = ScriptedModel(name="scripted")
    chat = PagedChat(mem, model, fill=fill)
    times: list[float] = []
    rest = lines[history:]
    for i in range(turns):
        text = rest[2 * i].text
        if i % 2 == 0:
            text = text.rstrip(".!") + ", do you remember what I said about that?"
        model.reply(rest[2 * i + 1].text)
        t0 = time.perf_counter()
        chat.send_sync(text)
        times.append(time.perf_counter() - t0)
    return times[0], times[1:]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--history", type=int, default=2000)
    ap.add_argument("--turns", type=int, default=60)
    ap.add_argument("--budget-tokens", type=int, default=8000)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    from copage.dense import ranker

    lines = lines_of_conversations([c for f in a.files for c in load_dataset(f).conversations])
    if len(lines) < a.history + 2 * a.turns:
        ap.error(f"the files hold {len(lines)} turns; need {a.history + 2 * a.turns}")
    results: dict[str, list[tuple[float, list[float]]]] = {"default": [], "dense": []}
    for _ in range(a.rounds):
        for name, got in results.items():
            fill = FillSettings(dense=ranker()) if name == "dense" else FillSettings(dense=None)
            got.append(run(lines, a.history, a.turns, a.budget_tokens, fill))
    print(f"{a.history} turns stored, then {a.turns} turns sent (half of them questions), "
          f"budget {a.budget_tokens}; {a.rounds} rounds alternated")
    print("| fill | first question (s) | later turns p50 (ms) | p95 (ms) | mean (ms) |")
    print("|---|---|---|---|---|")
    for name, rs in results.items():
        later = sorted(t for _, ts in rs for t in ts)
        p95 = later[int(0.95 * (len(later) - 1))]
        print(f"| {name} | {statistics.median(c for c, _ in rs):.1f} | "
              f"{1000 * statistics.median(later):.1f} | {1000 * p95:.1f} | "
              f"{1000 * statistics.fmean(later):.1f} |")


if __name__ == "__main__":
    main()
