"""Facts asked in other words, answered by a real model, with and without the meaning channel.

For the first ``--facts`` facts of a split of the paraphrase set (in the set's order,
none chosen by hand), a chat is built as bench/bench_paraphrase.py builds it (a few
LoCoMo turns, the fact's statement and a short reply, then ``--gap`` turns) and stored
with ``PagedMemory.add`` (no model call); then the fact's question is sent once through
``PagedChat`` to the model, with copage's defaults but for a small paging budget
(``--budget-tokens``, so that a small local model's window holds the request), once
without and once with ``FillSettings(dense=copage.dense.ranker(...))``. Reported per
fact: whether the statement was in the request (``reached``) and whether the answer
names one of the fact's proof words (``named``: a lexical check, not a judge).

Run (Qwen2.5-Coder-1.5B served by scripts/serve-qwen.sh 8091; about a minute a request
on 2 cores)::

    PYTHONPATH=src python bench/bench_dense_model.py ../shared/data/locomo/locomo-sample.json \\
        ../shared/data/locomo/locomo-more.json \\
        --model openai:qwen2.5-coder-1.5b-instruct@http://127.0.0.1:8091/v1
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench_paraphrase import STRIDE

from copage import FillSettings, PagedChat, PagedMemory
from copage.eval.datasets import load_dataset
from copage.eval.paraphrase import (
    ACK,
    FACTS,
    Fact,
    Line,
    classify,
    lines_of_conversations,
    split,
    window,
)
from copage.llm.chat_messages import text_of
from copage.llm.model_types import ChatModel, ChatRequest, ChatResponse
from copage.llm.providers import get_model


def build(fact: Fact, lines: Sequence[Line], gap: int, budget: int) -> PagedMemory:
    start = FACTS.index(fact) * STRIDE
    mem = PagedMemory(budget_tokens=budget, budget_floor=budget // 2)
    for line in [*window(lines, start, 10), Line("user", fact.statement), Line("assistant", ACK),
                 *window(lines, start + 10, gap)]:
        mem.add(line.role, line.text)
    return mem


class Recording:
    """A model that keeps every request it is sent (and passes it on)."""

    def __init__(self, model: ChatModel) -> None:
        self.model, self.requests = model, []  # type: list[ChatRequest]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return await self.model.complete(request)


def ask(fact: Fact, mem: PagedMemory, model: str, fill: FillSettings) -> dict[str, object]:
    recorder = Recording(get_model(model, timeout=900.0, max_retries=1))
    chat = PagedChat(mem, recorder, fill=fill, temperature=0.0, max_tokens=96)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    report = chat.send_sync(fact.question)
    texts = [text_of(m.get("content")) for m in recorder.requests[0].messages]
    reached = classify(fact, texts, filled=bool(report.speculative)) != "missing"
    answer = report.answer or ""
    named = any(re.search(rf"\b{re.escape(w)}\b", answer, re.IGNORECASE) for w in fact.proof)
    return {"fact": fact.id, "reached": reached, "named": named, "answer": answer[:200],
            "seconds": round(time.perf_counter() - t0, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--model", required=True)
    ap.add_argument("--split", default="dev", choices=["dev", "final"])
    ap.add_argument("--facts", type=int, default=8)
    ap.add_argument("--gap", type=int, default=300)
    ap.add_argument("--budget-tokens", type=int, default=2000)
    ap.add_argument("--dense-cache", type=Path)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    from copage.dense import ranker

    dense = FillSettings(dense=ranker(cache=a.dense_cache))
    convs = [c for f in a.files for c in load_dataset(f).conversations]
    lines = lines_of_conversations(convs)
    rows = []
    for fact in split(a.split)[:a.facts]:
        for name, fill in (("default", FillSettings(dense=None)), ("dense", dense)):
            row = {"method": name, **ask(fact, build(fact, lines, a.gap, a.budget_tokens),
                                         a.model, fill)}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    for name in ("default", "dense"):
        rs = [r for r in rows if r["method"] == name]
        print(f"{name}: reached {sum(bool(r['reached']) for r in rs)}/{len(rs)}, "
              f"answer names the fact {sum(bool(r['named']) for r in rs)}/{len(rs)}")
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
