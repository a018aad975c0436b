"""The LiteLLM hook's own time per turn, in process (no LiteLLM proxy, no network).

One conversation resends its whole history each turn, as an OpenAI client does; each
turn is what LiteLLM's proxy calls on the hook: ``async_pre_call_hook`` (find, lock,
store the new message, build the paged view with its fill) then
``async_post_call_success_hook`` with a LiteLLM ``ModelResponse`` (store the answer,
commit, unlock). The time of both is reported for the turns ``T .. T+window-1`` of each
``T`` in ``--at``, with the number of messages the view sent on instead of the history.
A SQLite file store and the paging of ``bench_proxy.py`` (pages of 4 turns, 2 resident).
Complements ``bench_proxy.py --litellm-hook``, whose end-to-end figures carry
LiteLLM's own cost and the shared machine's noise.

    python bench/bench_litellm_hook.py [--at 10,200,800] [--window 20] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline: its own price map

from litellm import ModelResponse

from copage.adapters.litellm import CopageHook


async def run(at: list[int], window: int, store: str) -> dict[int, dict[str, float]]:
    hook = CopageHook(store, boundary="fixed_4", resident_pages=2)
    history: list[dict[str, Any]] = []
    times: dict[int, list[float]] = {t: [] for t in at}
    sent: dict[int, list[int]] = {t: [] for t in at}
    for n in range(1, max(at) + window):
        history.append({"role": "user", "content": f"turn {n}: tell me about item {n} (the "
                        f"code word is w{n}) and how it relates to the earlier ones"})
        data: dict[str, Any] = {"model": "fake", "messages": list(history),
                                "litellm_call_id": f"call-{n}",
                                "proxy_server_request": {"headers": {
                                    "x-copage-conversation": "bench"}}}
        answer = f"Item {n} relates to item {n - 1} through w{n}."
        response = ModelResponse(choices=[{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": answer}}], model="fake")
        t0 = time.perf_counter()
        data = await hook.async_pre_call_hook(None, None, data, "acompletion")
        await hook.async_post_call_success_hook(data, None, response)
        dt = time.perf_counter() - t0
        history.append({"role": "assistant", "content": answer})
        point = next((t for t in at if t <= n < t + window), None)
        if point is not None:
            times[point].append(dt)
            sent[point].append(len(data["messages"]))
    assert hook.counts["stored"] == max(at) + window - 1
    return {t: {"p50_ms": statistics.median(times[t]) * 1000,
                "max_ms": max(times[t]) * 1000,
                "history": 2 * t - 1, "sent": statistics.median(sent[t])} for t in at}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--at", default="10,200,800")
    ap.add_argument("--window", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3, help="runs; figures: median of runs")
    args = ap.parse_args()
    at = [int(x) for x in args.at.split(",")]
    runs = []
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(asyncio.run(run(at, args.window, f"sqlite://{tmp}/hook-{i}.db")))
    print("| turn | hook p50 per turn | max | messages in the request | messages sent on |")
    print("|---|---|---|---|---|")
    for t in at:
        p50 = statistics.median(r[t]["p50_ms"] for r in runs)
        mx = statistics.median(r[t]["max_ms"] for r in runs)
        print(f"| {t} | {p50:.2f} ms | {mx:.2f} ms | {runs[0][t]['history']} | "
              f"{runs[0][t]['sent']:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
