"""Recall modes of PagedChat against a real model on a few seeded LoCoMo probes.

For each mode (``recall_mode:prompt``) it asks the same probes (categories 1, 2
and 4 whose evidence is in an evicted page) with ``copage.eval.methods.probe_driver.ask_probe`` and
prints trigger rate, right-page rate, LoCoMo F1, prompt tokens and model calls.
Rows are appended to a JSONL file and skipped when run again (resumable; the
shared local server is slow). Not the benchmark (``copage bench``): a probe of
the loop's modes.

    python bench/bench_recall_modes.py --data /work/shared/data/locomo/locomo-sample.json \\
        --model openai:qwen@http://127.0.0.1:8091/v1 --probes 6 --seed 0 \\
        --modes tool:paper,tool:compact,choose:compact,choose+tool:compact \\
        --out /tmp/recall_modes.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

from copage.eval.datasets.locomo import load_locomo
from copage.eval.methods.bookmark import BookmarkConversation, Variant
from copage.eval.methods.method import MethodSettings
from copage.eval.methods.probe_driver import ask_probe
from copage.eval.runner.probe_metrics import right_page_rate, trigger_rate
from copage.eval.scoring.locomo_f1 import locomo_f1
from copage.llm import get_model
from copage.session import PagedChat
from copage.session.records import ProbeRecord


def pick(conv: BookmarkConversation, n: int, seed: int) -> list[Any]:
    """``n`` seeded probes, as many of categories 1, 2 and 4 each, whose evidence is evicted."""
    evicted = set(conv.pager.evicted)
    rng = random.Random(seed)
    by_cat = []
    for cat in (2, 4, 1):
        pool = [p for p in conv.conversation.probes
                if p.category == cat and p.answer and conv.needed(p)
                and set(conv.needed(p)) <= evicted]
        by_cat.append(rng.sample(pool, len(pool)))
    out: list[Any] = []
    while len(out) < n and any(by_cat):
        for pool in by_cat:
            if pool and len(out) < n:
                out.append(pool.pop())
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--sample", default="conv-26")
    ap.add_argument("--model", required=True)
    ap.add_argument("--probes", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--resident", type=int, default=3)
    ap.add_argument("--modes", default="tool:paper,tool:compact,choose:compact,choose+tool:compact")
    ap.add_argument("--max-tokens", type=int, default=60)
    ap.add_argument("--out", default="recall_modes.jsonl")
    ap.add_argument("--reminder", default=None,
                    help="replace the compact prompt's reminder (an experiment; {tool} is the name)")
    args = ap.parse_args()
    if args.reminder:
        from copage.session import prompts

        prompts.REMINDER = args.reminder

    data = load_locomo(args.data)
    conversation = next(c for c in data.conversations if c.id == args.sample)
    settings = MethodSettings(resident_pages=args.resident, max_tokens=args.max_tokens)
    conv = BookmarkConversation(conversation, settings, Variant())
    probes = pick(conv, args.probes, args.seed)
    model = get_model(args.model, timeout=600, max_retries=1)
    out = Path(args.out)
    done = set()
    if out.exists():
        for line in out.read_text().splitlines():
            row = json.loads(line)
            done.add((row["mode"], row["probe"]))
    for spec in args.modes.split(","):
        mode, _, style = spec.partition(":")
        style, _, _tag = style.partition("@")  # "tool:compact@r2": a tag for variants
        chat = PagedChat(conv.memory, model, recall_mode=mode, prompt=style or "paper",
                         temperature=0.0, max_tokens=args.max_tokens)
        for probe in probes:
            if (spec, probe.id) in done:
                continue
            start = time.perf_counter()
            rec = await ask_probe(chat, probe.question, conv.needed(probe), keep_pages=False)
            rep = rec.report
            assert rep is not None
            row = {
                "mode": spec, "probe": probe.id, "category": probe.category,
                "question": probe.question, "gold": probe.answer, "answer": rec.answer,
                "f1": locomo_f1(rec.answer, probe.answer, probe.category),
                "needed": list(rec.needed), "evicted": list(rec.evicted),
                "speculative": list(rec.speculative),
                "recalls": [[r.tool, r.page, r.status] for r in rec.recalls],
                "triggered": rec.triggered, "right_page": rec.right_page,
                "needs_recall": rec.needs_recall, "prompt_tokens": list(rep.prompt_tokens),
                "calls": rep.model_calls, "seconds": round(time.perf_counter() - start, 1),
            }
            _append(out, row)
            print(json.dumps(row), flush=True)
    report(out, probes, args.modes.split(","))


def report(path: Path, probes: list[Any], modes: list[str]) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    ids = {p.id for p in probes}
    print("\n| mode | n | trigger | right page | needed page in | F1 | prompt tokens / probe "
          "| calls |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for mode in modes:
        sel = [r for r in rows if r["mode"] == mode and r["probe"] in ids]
        if not sel:
            continue
        recs = [ProbeRecord(tuple(r["needed"]), tuple(r["evicted"]), (), tuple(
            _record(x) for x in r["recalls"])) for r in sel]
        f1 = sum(r["f1"] for r in sel) / len(sel)
        got = sum(bool(set(r["needed"]) & ({x[1] for x in r["recalls"] if x[2] == "paged_in"}
                                            | set(r.get("speculative", []))))
                  for r in sel)
        tokens = sum(sum(r["prompt_tokens"]) for r in sel) / len(sel)
        calls = sum(r["calls"] for r in sel) / len(sel)
        print(f"| {mode} | {len(sel)} | {trigger_rate(recs)} | {right_page_rate(recs)} | "
              f"{got}/{len(sel)} | {f1:.3f} | {tokens:.0f} | {calls:.1f} |")


def _append(path: Path, row: dict[str, Any]) -> None:
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")


def _record(x: list[Any]) -> Any:
    from copage.session.records import RecallRecord

    return RecallRecord("c", x[0], "", x[2], page=x[1])


if __name__ == "__main__":
    asyncio.run(main())
