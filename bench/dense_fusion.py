"""The meaning channel's fused order, chosen leave-one-conversation-out (docs/retrieval.md,
"Fused order").

LLM-free, the harness of bench/dense_channel.py (copage's 3-turn passages, BM25 with
the feedback words, all-MiniLM-L6-v2 through ``copage.dense``, centred cosines). For
every LoCoMo question of categories 1-4 and K passages, the share of questions whose
evidence turns are all shown, for:

* ``reserve1``: the channel's one place, then BM25's order (the fill before);
* ``fused@W``: the channel's one place, then every passage by its BM25 score divided
  by the best plus W x its best turn's cosine min-max scaled over the passages
  (``copage.core.dense_rank.DenseRanker.fused``).

Then each conversation is held out in turn: the setting with the best mean over all K
on the other conversations is chosen and scored on the held-out one. Run::

    OPENBLAS_NUM_THREADS=2 PYTHONPATH=src:bench python bench/dense_fusion.py \\
        ../shared/data/locomo/locomo-sample.json ../shared/data/locomo/locomo-more.json \\
        --cache CACHE_DIR [--weights 0.2,0.3,0.4,0.5]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np
from dense_channel import LOCOMO_KS, WIDTH, Embeddings, bm25_rank, centre, passage_index, reserve

from copage.core.dense_rank import turn_text
from copage.core.passages import expand
from copage.core.text import query_terms
from copage.eval.datasets import load_dataset

Scores = dict[str, dict[int, dict[str, list[float]]]]
"""method -> K -> conversation -> per question: 1.0 when all its evidence is shown."""


def fused_order(bm25: np.ndarray, cos: np.ndarray, weight: float) -> list[int]:
    """Passage starts by BM25 / its best + ``weight`` x min-max scaled cosine (ties: earlier)."""
    lex = bm25 / bm25.max() if bm25.max() > 0 else bm25
    meaning = (cos - cos.min()) / max(float(cos.max() - cos.min()), 1e-9)
    return [int(s) for s in np.lexsort((np.arange(len(cos)), -(lex + weight * meaning)))]


def measure(convs: Sequence, emb: Embeddings, weights: Sequence[float]) -> Scores:
    methods = ["reserve1", *(f"fused@{w}" for w in weights)]
    out: Scores = {m: {k: {} for k in LOCOMO_KS} for m in methods}
    emb([*(p.question for c in convs for p in c.probes),
         *(turn_text(t) for c in convs for t in c.turns)])
    for conv in convs:
        turns = list(conv.turns)
        index, at = passage_index(turns), conv.turn_index()
        vectors = emb([turn_text(t) for t in turns])
        n = len(index)
        for probe in conv.probes:
            if probe.category not in (1, 2, 3, 4):
                continue
            evidence = {at[e] for e in probe.evidence}
            terms = expand(index, query_terms(probe.question))
            bm25 = np.zeros(n)
            for start, score in index.top(terms, n):
                bm25[start] = score
            q, t = centre(emb([probe.question])[0], vectors)
            c = t @ q
            cos = np.stack([c[i:i + n] for i in range(WIDTH)]).max(0)
            by_meaning = [int(s) for s in np.lexsort((np.arange(n), -cos))]
            orders = {"reserve1": bm25_rank(index, terms),
                      **{f"fused@{w}": fused_order(bm25, cos, w) for w in weights}}
            for m, order in orders.items():
                for k in LOCOMO_KS:
                    shown = {s + j for s in reserve(order, by_meaning, k) for j in range(WIDTH)}
                    out[m][k].setdefault(conv.id, []).append(float(evidence <= shown))
    return out


def report(scores: Scores) -> str:
    ids = list(next(iter(scores.values()))[LOCOMO_KS[0]])
    rows = ["| method | " + " | ".join(f"K={k}" for k in LOCOMO_KS) + " |",
            "|---|" + "---|" * len(LOCOMO_KS)]
    for m, by_k in scores.items():
        rows.append(f"| {m} | " + " | ".join(
            f"{np.mean([x for v in by_k[k].values() for x in v]):.3f}" for k in LOCOMO_KS) + " |")
    picks, held = [], {k: [] for k in LOCOMO_KS}
    for out in ids:
        def mean_rest(m: str, out: str = out) -> float:
            return float(np.mean([np.mean(scores[m][k][c]) for k in LOCOMO_KS
                                  for c in ids if c != out]))
        best = max(scores, key=mean_rest)
        picks.append(f"{out}: {best}")
        for k in LOCOMO_KS:
            held[k].extend(scores[best][k][out])
    rows += ["", "Held out (each conversation scored with the setting best on the others): "
             + " / ".join(f"K={k} {np.mean(held[k]):.3f}" for k in LOCOMO_KS),
             "Choices: " + "; ".join(picks)]
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="LoCoMo JSON files")
    ap.add_argument("--model", help="the model folder (default: where copage.dense finds it)")
    ap.add_argument("--cache", required=True, help="folder for the embedding cache")
    ap.add_argument("--weights", default="0.2,0.3,0.4,0.5", help="comma list of W")
    a = ap.parse_args(argv)
    convs = [c for f in a.files for c in load_dataset(f).conversations]
    weights = [float(w) for w in a.weights.split(",")]
    print(report(measure(convs, Embeddings(a.model, a.cache), weights)))


if __name__ == "__main__":
    main()
