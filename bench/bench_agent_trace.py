"""Paging tool results in a long agent session vs "keep the last N tool results".

A seeded synthetic agent trace: ``--calls`` tool calls (read a file, grep, run a
command), each answered by a tool output of 200-5,000 tokens (log-like lines, and
one setting only that output holds), and ``--probes`` user questions, each about
the setting of an output at least ``--min-age`` calls old, naming the tool call's
path and the setting's name, as a user referring back would.

Methods, all LLM-free (no model is asked anything):

* ``full``: the whole history in every request.
* ``last-N``: the placeholder rule of context editing (Anthropic's
  ``clear_tool_uses``): the last N tool results kept, older ones replaced by a
  placeholder; the tool calls stay.
* ``copage``: ``PagedMemory`` (tool results are turns, paged with their calls), at
  the given paging settings. For each probe: whether the needed output is in the
  prompt as it is (resident), after a BM25 page-in of the best-matching evicted
  page for the question (the ``speculative`` recall mode's rule, no model step),
  and whether the evicted page's bookmark names the probe's path or setting (what
  a model needs to pick it with ``recall``). ``bookmark pick`` pages in instead the
  evicted page whose bookmark shares the most words with the question: an
  LLM-free stand-in for a model choosing a bookmark (not a model's result).

Prompt tokens per request are the content tokens (o200k_base) of the messages
sent, measured every ``--every`` calls and at each probe, averaged.

    python bench/bench_agent_trace.py --calls 200 --probes 40 --seed 0
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from copage.core.config import PagerConfig
from copage.core.tokens import count_tokens
from copage.memory import PagedMemory

PLACEHOLDER = "[tool result cleared]"
SERVICES = ["auth", "billing", "search", "ingest", "gateway", "scheduler", "cache", "mailer",
            "reports", "payments", "profiles", "notify"]
VERBS = ["started", "finished", "retrying", "flushed", "loaded", "skipped", "merged",
         "rejected", "queued", "compacted"]
OBJECTS = ["batch", "request", "segment", "index", "snapshot", "job", "session", "shard",
           "manifest", "lease"]
KEYS = ["timeout", "pool size", "retry limit", "port", "batch size", "ttl", "quota",
        "shard count", "max connections", "buffer size"]


@dataclass
class Step:
    """One tool call and its output, or a probe about an earlier output."""

    kind: str  # "call" or "probe"
    text: str  # the user's request / question
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)
    output: str = ""
    needle: str = ""  # for a call: its setting line; for a probe: the line it needs
    target: int = -1  # for a probe: the call it is about
    names: tuple[str, ...] = ()  # for a probe: the path and setting it names


def make_trace(calls: int, probes: int, min_age: int, seed: int) -> list[Step]:
    rng = random.Random(seed)
    out: list[Step] = []
    made: list[Step] = []
    probe_at = sorted(rng.sample(range(min_age + 1, calls), probes))
    for i in range(calls):
        service = rng.choice(SERVICES)
        kind = rng.choice(["read_file", "grep", "run"])
        path = f"{service}/{rng.choice(['config', 'worker', 'main', 'deploy'])}_{i}.{rng.choice(['py', 'toml', 'log'])}"
        key = f"{rng.choice(KEYS)} of {service} {i}"
        value = f"{rng.randint(10, 99999)}{rng.choice(['ms', '', 'MB', 's'])}"
        needle = f"setting: {key} = {value}"
        target = int(rng.uniform(200, 5000))
        lines = []
        n_lines = max(4, target // 13)
        pos = rng.randrange(n_lines)
        for j in range(n_lines):
            if j == pos:
                lines.append(needle)
            lines.append(f"{service}.{rng.choice(OBJECTS)} {rng.choice(VERBS)} "
                         f"{rng.choice(OBJECTS)} {rng.randint(1, 9999)} in {rng.randint(1, 999)} ms")
        args = {"path": path} if kind != "run" else {"command": f"cat {path}"}
        step = Step("call", f"Look at {path}.", kind, args, "\n".join(lines), needle)
        out.append(step)
        made.append(step)
        while probe_at and probe_at[0] == i:
            probe_at.pop(0)
            t = rng.randrange(0, i - min_age + 1)
            old = made[t]
            key = old.needle.split(": ", 1)[1].split(" = ")[0]
            p = old.args.get("path") or old.args["command"].split()[-1]
            out.append(Step("probe", f"Earlier we looked at {p}: what was the {key} there?",
                            needle=old.needle, target=t, names=(p, key)))
    return out


def run_last_n(trace: list[Step], n: int | None, every: int) -> dict[str, Any]:
    """``n`` None: the whole history."""
    fixed = 0  # tokens of everything but tool outputs
    outputs: list[int] = []
    tokens: list[int] = []
    placeholder = count_tokens(PLACEHOLDER)
    hit = probes = 0
    for step in trace:
        if step.kind == "call":
            fixed += count_tokens(step.text) + count_tokens(json.dumps(step.args))
            outputs.append(count_tokens(step.output))
            if len(outputs) % every == 0:
                tokens.append(fixed + _kept(outputs, n, placeholder))
            fixed += count_tokens("done")  # the assistant's short reply after the output
        else:
            probes += 1
            calls = len(outputs)
            hit += n is None or step.target >= calls - n
            tokens.append(fixed + count_tokens(step.text) + _kept(outputs, n, placeholder))
            fixed += count_tokens(step.text) + count_tokens("noted")
    return {"tokens": statistics.mean(tokens), "in_prompt": hit / probes, "probes": probes}


def _kept(outputs: list[int], n: int | None, placeholder: int) -> int:
    if n is None or len(outputs) <= n:
        return sum(outputs)
    return sum(outputs[-n:]) + placeholder * (len(outputs) - n)


def run_copage(trace: list[Step], config: PagerConfig, every: int) -> dict[str, Any]:
    mem = PagedMemory(store="memory://", config=config)
    tokens: list[int] = []
    resident = paged_in = named = picked = probes = calls = 0
    t0 = time.perf_counter()
    for step in trace:
        if step.kind == "call":
            calls += 1
            cid = f"call_{calls}"
            mem.add("user", step.text)
            mem.add("assistant", "", tool_calls=[{"id": cid, "type": "function", "function": {
                "name": step.tool, "arguments": json.dumps(step.args)}}])
            mem.add("tool", step.output, tool_call_id=cid)
            if calls % every == 0:
                tokens.append(mem.stats().prompt_tokens)
            mem.add("assistant", "done")
            continue
        probes += 1
        q = step.text
        tokens.append(mem.stats(q).prompt_tokens)
        if _shown(mem, q, step.needle):
            resident += 1
            paged_in += 1
            picked += 1
        else:
            picked += _pick(mem, q) == _page_of(mem, step.needle)
            page = _page_of(mem, step.needle)
            if page is not None:
                text = mem.bookmarks()[page].text.lower()
                named += any(name.lower() in text for name in step.names)
            hits = mem.search(q, limit=1, include_resident=False)
            if hits:
                mem.recall(hits[0].page)
                paged_in += _shown(mem, q, step.needle)
        mem.add("user", q)
        mem.add("assistant", "noted")
    s = mem.stats()
    return {"tokens": statistics.mean(tokens), "resident": resident / probes,
            "in_prompt": paged_in / probes, "picked": picked / probes, "bookmark_names": named / max(1, probes - resident),
            "probes": probes, "pages": s.pages, "evicted": s.evicted,
            "seconds": time.perf_counter() - t0}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[\w/.]+", text.lower()))


def _pick(mem: PagedMemory, question: str) -> Any:
    """The evicted page whose bookmark shares the most words with ``question``."""
    words = _words(question)
    books = mem.bookmarks()
    scored = [(len(words & _words(books[p].text)), -i, p) for i, p in enumerate(mem.evicted)]
    return max(scored)[2] if scored else None


def _shown(mem: PagedMemory, question: str, needle: str) -> bool:
    return any(needle in str(m.get("content") or "") for m in mem.context(question).messages)


def _page_of(mem: PagedMemory, needle: str) -> Any:
    for p in mem.pages:
        if any(needle in t.text for t in p.turns):
            return p.id
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--probes", type=int, default=40)
    ap.add_argument("--min-age", type=int, default=20, dest="min_age")
    ap.add_argument("--every", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--last", default="3,10,30", help="N values of the last-N rule")
    ap.add_argument("--copage", default="fixed_10:5,fixed_4:4,fixed_4:2",
                    help="boundary:resident_pages settings of copage")
    args = ap.parse_args()
    trace = make_trace(args.calls, args.probes, args.min_age, args.seed)
    sizes = [count_tokens(s.output) for s in trace if s.kind == "call"]
    print(f"trace: {args.calls} tool calls, outputs {min(sizes)}-{max(sizes)} tokens "
          f"(mean {statistics.mean(sizes):.0f}, total {sum(sizes)}), {args.probes} probes, "
          f"each about an output >= {args.min_age} calls old; seed {args.seed}")
    print(f"{'method':<22} {'tokens/request':>15} {'needed output in prompt':>24}  notes")
    full = run_last_n(trace, None, args.every)
    print(f"{'full history':<22} {full['tokens']:>15.0f} {full['in_prompt']:>23.0%}")
    for n in (int(x) for x in args.last.split(",")):
        r = run_last_n(trace, n, args.every)
        print(f"{f'keep last {n}':<22} {r['tokens']:>15.0f} {r['in_prompt']:>23.0%}")
    for spec in args.copage.split(","):
        boundary, k = spec.split(":")
        r = run_copage(trace, PagerConfig(boundary=boundary, resident_pages=int(k)), args.every)
        print(f"{f'copage {boundary} k={k}':<22} {r['tokens']:>15.0f} {r['in_prompt']:>23.0%}  "
              f"resident {r['resident']:.0%}, after BM25 page-in {r['in_prompt']:.0%}, "
              f"with bookmark pick {r['picked']:.0%}; "
              f"bookmark names the evicted output {r['bookmark_names']:.0%}; "
              f"{r['pages']} pages, {r['evicted']} evicted; {r['seconds']:.0f}s")


if __name__ == "__main__":
    main()
