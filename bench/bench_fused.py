"""Cost of the meaning channel's fused order per question (docs/retrieval.md, "Fused order").

``Speculator.plan`` with a meaning channel, for LoCoMo questions over a conversation of
N turns (LoCoMo's turns repeated, budget paging at 2,000 tokens so most pages are
evicted), the fused order (``DenseRanker(weight=0.3)``, the default) against the order
before it (``weight=0``: the channel's place, then BM25's), alternated question by
question in one process. The encoder is a stand-in (each word hashed to one of 384
axes): the vectors are embedded once before timing, so the figures are the ranking's
own cost, not the encoder's. Median CPU time per question and the ratio.

    PYTHONPATH=src python bench/bench_fused.py ../shared/data/locomo/locomo-sample.json \\
        [--sizes 2000,10000] [--questions 40]
"""

from __future__ import annotations

import argparse
import re
import statistics
import time
import zlib
from collections.abc import Sequence

import numpy as np

from copage import PagedMemory
from copage.core.dense_rank import DenseRanker
from copage.eval.datasets import load_dataset
from copage.session.speculate import Speculator


class HashedWords:
    """Unit vectors: each word adds 1 on one of 384 axes (crc32 of the word)."""

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), np.float32)
        for row, text in enumerate(texts):
            for w in re.findall(r"[a-z']+", text.lower()):
                out[row, zlib.crc32(w.encode()) % 384] += 1.0
            out[row] /= max(float(np.linalg.norm(out[row])), 1e-9)
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--sizes", default="2000,10000")
    ap.add_argument("--questions", type=int, default=40)
    a = ap.parse_args()
    conv = load_dataset(a.file).conversations[0]
    texts = [(t.role, t.text) for t in conv.turns]
    questions = [p.question for p in conv.probes][:a.questions]
    print("| turns | evicted pages | fused, ms (median) | BM25 order, ms (median) | ratio |")
    print("|---|---|---|---|---|")
    for n in (int(s) for s in a.sizes.split(",")):
        mem = PagedMemory(budget_tokens=2000)
        with mem.transaction():
            for i in range(n):
                role, text = texts[i % len(texts)]
                mem.add(role, text)
        encoder = HashedWords()
        fused = Speculator(whole=False, dense=DenseRanker(encoder))
        plain = Speculator(whole=False, dense=DenseRanker(encoder, weight=0))
        fused.plan(mem, questions[0])  # embeds every turn (not timed)
        plain.plan(mem, questions[0])
        times: dict[str, list[float]] = {"fused": [], "plain": []}
        for q in questions:
            for name, spec in (("fused", fused), ("plain", plain)):
                t0 = time.process_time()
                spec.plan(mem, q)
                times[name].append(time.process_time() - t0)
        f, p = (statistics.median(times[k]) * 1000 for k in ("fused", "plain"))
        print(f"| {n:,} | {len(mem.evicted)} | {f:.1f} | {p:.1f} | {f / p:.2f} |")


if __name__ == "__main__":
    main()
