"""Share of each request's prompt that repeats the previous request's prefix, and cost.

Each LoCoMo conversation of the given files (its first ``--turns`` turns; the
first speaker is the user) is replayed through a ``PagedMemory`` (library
defaults unless ``--keywords``/``-k`` say otherwise): after every user turn the
app asks for ``context()`` (one request, as a chat app does before the
assistant answers). Prints, per conversation, what ``stats().prompt_cache``
reports: the median and mean prefix share, and the input cost of all requests
paged and full context, uncached and with provider caching priced in.

Run::

    .venv/bin/python bench/bench_prompt_cache.py ../shared/data/locomo/locomo-sample.json \\
        ../shared/data/locomo/locomo-more.json --turns 300

With ``--mode MODE`` (a ``PagedChat`` recall mode, e.g. ``speculative``) each user
turn is sent through ``PagedChat`` instead (a scripted model answers with the
conversation's next assistant turn), and the requests the model really received are
metered too (``sent``: the fill and the prompt style included), beside
``stats().prompt_cache`` (which meters what ``PagedChat`` sends, so the two agree) and
its costs with caching priced in, paged and full context.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence
from typing import Any

from copage import PagedMemory
from copage.core.promptcache import PromptMeter
from copage.llm.scripted import ScriptedModel
from copage.session import PagedChat


def replay(turns: Sequence[Any], n: int, settings: dict[str, Any]) -> dict[str, Any]:
    mem = PagedMemory(**settings)
    first = turns[0].speaker or turns[0].role
    for turn in turns[:n]:
        role = "user" if (turn.speaker or turn.role) == first else "assistant"
        mem.add(role, turn.text, speaker=turn.speaker, timestamp=turn.timestamp,
                session=turn.session)
        if role == "user":
            mem.context()
    pc = mem.stats().prompt_cache
    assert pc is not None
    return {**pc, "mean": statistics.fmean(mem.pager.prompt_meter.shares)}


def replay_chat(turns: Sequence[Any], n: int, settings: dict[str, Any],
                mode: str, chat_options: dict[str, Any] | None = None,
                ) -> tuple[dict[str, Any], list[float], int]:
    """Replay through ``PagedChat`` in ``mode``; returns ``stats().prompt_cache``, the
    prefix shares of the requests sent, and the turns that got a speculative fill."""
    mem = PagedMemory(**settings)
    model = ScriptedModel()
    chat = PagedChat(mem, model, recall_mode=mode, **(chat_options or {}))
    first = turns[0].speaker or turns[0].role
    filled, i = 0, 0
    turns = list(turns[:n])
    while i < len(turns):
        turn = turns[i]
        meta = {"speaker": turn.speaker, "timestamp": turn.timestamp, "session": turn.session}
        if (turn.speaker or turn.role) != first:  # an assistant turn no user turn preceded
            mem.add("assistant", turn.text, **meta)
            i += 1
            continue
        nxt = turns[i + 1] if i + 1 < len(turns) else None
        answer = nxt.text if nxt is not None and (nxt.speaker or nxt.role) != first else "ok"
        model.reply(answer)
        report = chat.send_sync(turn.text, **meta)
        filled += bool(report.speculative)
        i += 2 if answer != "ok" else 1
    meter = PromptMeter(mem.pager.tokenizer)
    for request in model.requests:
        meter.record(request.messages, request.tools or [], 0, 0)
    pc = mem.stats().prompt_cache
    assert pc is not None
    return pc, meter.shares, filled


def _costs(pc: dict[str, Any]) -> str:
    o, a, s = (pc["cost_usd"][m] for m in ("gpt-4o-mini", "claude-haiku-4-5", "claude-sonnet-4-5"))
    return (f"{o['paged_cached']:.4f} / {o['full_cached']:.4f}, "
            f"{a['paged_cached']:.4f} / {a['full_cached']:.4f}, "
            f"{s['paged_cached']:.4f} / {s['full_cached']:.4f}")


def main() -> None:
    from copage.eval.datasets import load_dataset

    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--turns", type=int, default=300)
    ap.add_argument("--keywords", default="")
    ap.add_argument("-k", type=int, default=0, help="resident pages (default: the library's)")
    ap.add_argument("--evict-batch", type=int, default=0, help="default: the library's")
    ap.add_argument("--mode", default="", help="send through PagedChat in this recall mode")
    ap.add_argument("--fill-tokens", type=int, default=None, help="PagedChat speculative_tokens")
    ap.add_argument("--threshold", type=float, default=None,
                    help="PagedChat speculative_threshold")
    args = ap.parse_args()
    chat_options: dict[str, Any] = {}
    if args.fill_tokens is not None:
        chat_options["speculative_tokens"] = args.fill_tokens
    if args.threshold is not None:
        chat_options["speculative_threshold"] = args.threshold
    settings: dict[str, Any] = {}
    if args.keywords:
        settings["keywords"] = args.keywords
    if args.k:
        settings["resident_pages"] = args.k
    if args.evict_batch:
        settings["evict_batch"] = args.evict_batch
    if args.mode:
        print(f"first {args.turns} turns through PagedChat(recall_mode={args.mode!r}); "
              f"settings {settings or 'defaults'}; chat options {chat_options or 'defaults'}")
        print(f"{'conversation':12s} {'requests':>8s} {'stats() median':>14s} "
              f"{'sent median':>11s} {'sent mean':>9s} {'filled turns':>12s}  "
              "stats() USD, paged cached / full cached: gpt-4o-mini, claude-haiku-4-5, "
              "claude-sonnet-4-5")
        for path in args.files:
            for conv in load_dataset(path, seed=0).conversations:
                pc, shares, filled = replay_chat(conv.turns, args.turns, settings, args.mode,
                                                 chat_options)
                print(f"{conv.id:12s} {len(shares):8d} {pc['prefix_share_median']:14.3f} "
                      f"{statistics.median(shares):11.3f} {statistics.fmean(shares):9.3f} "
                      f"{filled:12d}  {_costs(pc)}")
        return
    print(f"first {args.turns} turns, a request after every user turn; settings {settings or 'defaults'}")
    print(f"{'conversation':12s} {'requests':>8s} {'median':>6s} {'mean':>6s}  "
          "gpt-4o-mini USD: paged / cached / full / full cached   "
          "claude-haiku-4-5 USD: paged / cached / full / full cached")
    for path in args.files:
        for conv in load_dataset(path, seed=0).conversations:
            r = replay(conv.turns, args.turns, settings)
            o, a = r["cost_usd"]["gpt-4o-mini"], r["cost_usd"]["claude-haiku-4-5"]
            print(f"{conv.id:12s} {r['requests']:8d} {r['prefix_share_median']:6.3f} {r['mean']:6.3f}  "
                  f"{o['paged']:.4f} / {o['paged_cached']:.4f} / {o['full']:.4f} / {o['full_cached']:.4f}   "
                  f"{a['paged']:.4f} / {a['paged_cached']:.4f} / {a['full']:.4f} / {a['full_cached']:.4f}")


if __name__ == "__main__":
    main()
