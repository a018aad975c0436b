"""A dense channel beside copage's fill: measured, not shipped (docs/retrieval.md).

Can a sentence encoder find the facts of the paraphrase set (``copage.eval.paraphrase``:
stated once, asked later in words that share no content word with the statement)
without costing LoCoMo evidence? LLM-free and offline, no PagedChat replay: each
method ranks copage's 3-turn passages (``copage.core.passages.PassageIndex``, one
window starting at every turn) for a question, and the top K are checked.

Methods:

* ``bm25``: copage's BM25 over the passages (``copage.core.text.query_terms``).
* ``bm25+expand``: the same with copage's feedback words (``copage.core.passages.expand``),
  the ranking copage's fill uses.
* ``minilm-turnmax``: all-MiniLM-L6-v2 (``copage.dense``); each turn is embedded
  once, a passage scores the highest cosine of its turns with the question.
* ``reserve1``: the fill's ranking takes K-1 passages, the last slot goes to the best
  ``minilm-turnmax`` passage not yet chosen (undefined at K=1).
* ``minilm-centred``, ``reserve1-centred``: the same after centring the question's and
  the turns' vectors on the chat's mean turn vector (each renormalised), as
  ``copage.core.dense_rank`` now scores (docs/dense.md, "Centring").

Measures:

* ``paraphrase``: the chat of bench/bench_paraphrase.py's condition (10 turns of real
  LoCoMo chat, the statement, its acknowledgement, ``--gap`` turns); hit@K = a chosen
  passage holds the statement's turn. ``--split final`` is measured once, for the chosen
  design only (``--method``), never to choose.
* ``locomo``: every question of categories 1-4; coverage@K = the share of its evidence
  turns among the turns of the top-K passages (mean), and the share of questions with
  all of them shown.
* ``check``: the model card's example cosines (reference 0.6660, 0.1046, 0.1411) and
  speed in turns per second.

The model folder (``--model``, default: where ``copage.dense.find_model`` finds it) is
the one ``copage dense fetch`` unpacks (docs/dense.md). Embeddings are cached by text
under ``--cache`` (``embeddings.sqlite``, ``copage.dense.EmbeddingCache``). Run::

    OPENBLAS_NUM_THREADS=2 PYTHONPATH=src python bench/dense_channel.py paraphrase \\
        ../shared/data/locomo/locomo-sample.json ../shared/data/locomo/locomo-more.json \\
        --model MODEL_DIR --cache CACHE_DIR --split dev
    ... locomo FILES --model MODEL_DIR --cache CACHE_DIR
    ... paraphrase FILES --model MODEL_DIR --cache CACHE_DIR --split final --method reserve1
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from bench_paraphrase import CONDITIONS, STRIDE

from copage.core.dense_rank import turn_text
from copage.core.passages import PassageIndex, expand
from copage.core.text import query_terms
from copage.core.types import Page, PageId, Turn
from copage.eval.datasets import load_dataset
from copage.eval.paraphrase import ACK, FACTS, Line, lines_of_conversations, split, window

WIDTH = 3
"""Turns per passage (copage's default, ``copage.core.passages.DEFAULT_WIDTH``)."""
PRE = CONDITIONS["2000"][0]
"""Turns before the statement (bench/bench_paraphrase.py's long conditions)."""
PARAPHRASE_KS = (1, 3, 5, 10)
LOCOMO_KS = (3, 6, 12, 24, 48, 96)
METHODS = ("bm25", "bm25+expand", "minilm-turnmax", "reserve1", "rrf", "rrf-tail", "tail12",
           "tail24", "minilm-centred", "reserve1-centred")
CENTRED = {"minilm-centred", "reserve1-centred"}
"""Methods whose vectors are centred on the conversation's mean turn vector first."""
FUSED = {"rrf", "rrf-tail", "tail12", "tail24"}
"""Methods built on reciprocal rank fusion of ``bm25+expand`` and ``minilm-turnmax``."""
RRF_K = 60
"""The usual constant of reciprocal rank fusion (Cormack et al. 2009), not tuned here."""


class Embeddings:
    """Turn and question embeddings by text: copage's encoder and embedding cache
    (``copage.dense``), the vectors kept in ``cache/embeddings.sqlite``."""

    def __init__(self, model_dir: str | Path | None, cache: str | Path) -> None:
        from copage.dense import EmbeddingCache, load_encoder

        self.encoder = load_encoder(model_dir)
        Path(cache).mkdir(parents=True, exist_ok=True)
        self.cache = EmbeddingCache(self.encoder, Path(cache) / "embeddings.sqlite")

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embedded now, the cache bypassed."""
        return self.encoder.encode(texts)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return self.cache.vectors(texts)


def passage_index(turns: Sequence[Turn]) -> PassageIndex:
    """copage's passage index over ``turns`` (all of them closed, as one page)."""
    page = Page(id=PageId("p1"), index=0, turns=tuple(turns), text="", tokens=0)
    return PassageIndex(WIDTH).sync([page])


def bm25_rank(index: PassageIndex, terms: Sequence[str]) -> list[int]:
    """Every passage start, best first: those BM25 scores above 0, then the rest in order."""
    top = [s for s, score in index.top(terms, len(index)) if score > 0]
    seen = set(top)
    return top + [s for s in range(len(index)) if s not in seen]


def centre(question: np.ndarray, turns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Both less the mean turn vector, normalised again (Mu & Viswanath 2018's
    "all-but-the-top", its first step: the direction every turn of the chat shares)."""
    mean = turns.mean(0)
    q, t = question - mean, turns - mean
    return q / max(float(np.linalg.norm(q)), 1e-9), t / np.maximum(
        np.linalg.norm(t, axis=1, keepdims=True), 1e-9)


def turnmax_rank(question: np.ndarray, turns: np.ndarray, n_passages: int) -> list[int]:
    """Passage starts by the highest cosine of the passage's turns with the question
    (rows are unit vectors; ties: the earlier passage)."""
    c = turns @ question
    score = np.stack([c[i:i + n_passages] for i in range(WIDTH)]).max(0)
    return [int(s) for s in np.lexsort((np.arange(n_passages), -score))]


def reserve(first: Sequence[int], second: Sequence[int], k: int, d: int = 1) -> list[int]:
    """``k`` passages: the ``k - d`` best of ``first``, then the best of ``second`` not
    already chosen."""
    if not 0 < d < k:
        raise ValueError(f"reserve needs 0 < d < k, got d={d}, k={k}")
    chosen = list(first[:k - d])
    for s in second:
        if len(chosen) >= k:
            break
        if s not in chosen:
            chosen.append(s)
    return chosen


Rankings = dict[str, list[int]]


def rankings(index: PassageIndex, question: str, emb: Embeddings, turn_texts: Sequence[str],
             methods: Sequence[str]) -> Rankings:
    """The full rankings the methods are made of."""
    terms = query_terms(question)
    out: Rankings = {}
    if "bm25" in methods:
        out["bm25"] = bm25_rank(index, terms)
    if {"bm25+expand", "reserve1"} & set(methods) or FUSED & set(methods):
        out["bm25+expand"] = bm25_rank(index, expand(index, terms))
    if {"minilm-turnmax", "reserve1"} & set(methods) or FUSED & set(methods):
        out["minilm-turnmax"] = turnmax_rank(emb([question])[0], emb(turn_texts), len(index))
    if CENTRED & set(methods):
        out["minilm-centred"] = turnmax_rank(*centre(emb([question])[0], emb(turn_texts)),
                                             len(index))
        if "bm25+expand" not in out:
            out["bm25+expand"] = bm25_rank(index, expand(index, terms))
    if FUSED & set(methods):
        rb = {s: r for r, s in enumerate(out["bm25+expand"])}
        rd = {s: r for r, s in enumerate(out["minilm-turnmax"])}
        out["rrf"] = sorted(rb, key=lambda s: (-(1 / (RRF_K + rb[s]) + 1 / (RRF_K + rd[s])), s))
    return out


def choose(method: str, ranks: Rankings, k: int) -> list[int] | None:
    """The ``k`` passages ``method`` picks (None where it is undefined)."""
    if method == "reserve1":
        return reserve(ranks["bm25+expand"], ranks["minilm-turnmax"], k) if k > 1 else None
    if method == "reserve1-centred":
        return reserve(ranks["bm25+expand"], ranks["minilm-centred"], k) if k > 1 else None
    if method in ("rrf-tail", "tail12", "tail24"):  # reserve1's head, then rrf's order
        base = (reserve(ranks["bm25+expand"], ranks["minilm-turnmax"], k) if k > 1
                else ranks["bm25+expand"][:k])
        head = list(base[:{"rrf-tail": max(1, k // 2), "tail12": 12, "tail24": 24}[method]])
        for s in ranks["rrf"]:
            if len(head) >= k:
                break
            if s not in head:
                head.append(s)
        return head
    return ranks[method][:k]


def fact_chat(lines: Sequence[Line], fact_index: int, gap: int) -> list[Turn]:
    """bench/bench_paraphrase.py's chat for a fact: PRE turns, statement, ACK, ``gap`` turns."""
    start = fact_index * STRIDE
    fact = FACTS[fact_index]
    chat = [*window(lines, start, PRE), Line("user", fact.statement), Line("assistant", ACK),
            *window(lines, start + PRE, gap)]
    return [Turn(id=f"t{i}", role=line.role, text=line.text) for i, line in enumerate(chat)]


def paraphrase(convs: Sequence[Any], emb: Embeddings, split_name: str, gap: int,
               methods: Sequence[str]) -> str:
    lines = lines_of_conversations(convs)
    facts = split(split_name)
    hits = {m: dict.fromkeys(PARAPHRASE_KS, 0) for m in methods}
    defined = {m: set() for m in methods}
    chats = [fact_chat(lines, FACTS.index(fact), gap) for fact in facts]
    if {"minilm-turnmax", "reserve1"} & set(methods) or (FUSED | CENTRED) & set(methods):
        emb([*(f.question for f in facts), *(t.text for turns in chats for t in turns)])
    for fact, turns in zip(facts, chats, strict=True):
        index = passage_index(turns)
        ranks = rankings(index, fact.question, emb, [t.text for t in turns], methods)
        good = set(range(PRE - WIDTH + 1, PRE + 1))  # passages holding the statement
        for m in methods:
            for k in PARAPHRASE_KS:
                chosen = choose(m, ranks, k)
                if chosen is not None:
                    defined[m].add(k)
                    hits[m][k] += bool(good & set(chosen))
    n = len(facts)
    rows = [(f"paraphrase, split {split_name}, {n} facts, {gap} turns after the statement: "
            "hit@K (a chosen passage holds the statement)"), "",
            "| method | " + " | ".join(f"hit@{k}" for k in PARAPHRASE_KS) + " |",
            "|---|" + "---|" * len(PARAPHRASE_KS)]
    for m in methods:
        rows.append(f"| {m} | " + " | ".join(f"{hits[m][k]}/{n}" if k in defined[m] else "-"
                                             for k in PARAPHRASE_KS) + " |")
    return "\n".join(rows)


def locomo(convs: Sequence[Any], emb: Embeddings, methods: Sequence[str]) -> str:
    share: dict[str, dict[int, list[float]]] = {m: {k: [] for k in LOCOMO_KS} for m in methods}
    full: dict[str, dict[int, list[float]]] = {m: {k: [] for k in LOCOMO_KS} for m in methods}
    n = 0
    if {"minilm-turnmax", "reserve1"} & set(methods) or (FUSED | CENTRED) & set(methods):
        emb([*(p.question for c in convs for p in c.probes),
             *(turn_text(t) for c in convs for t in c.turns)])
    for conv in convs:
        turns = list(conv.turns)
        index = passage_index(turns)
        at = conv.turn_index()
        texts = [turn_text(t) for t in turns]
        for probe in conv.probes:
            if probe.category not in (1, 2, 3, 4):
                continue
            n += 1
            evidence = {at[e] for e in probe.evidence}
            ranks = rankings(index, probe.question, emb, texts, methods)
            for m in methods:
                for k in LOCOMO_KS:
                    chosen = choose(m, ranks, k) or []
                    shown = {s + j for s in chosen for j in range(WIDTH)}
                    share[m][k].append(len(evidence & shown) / len(evidence))
                    full[m][k].append(float(evidence <= shown))
    rows = [(f"LoCoMo, {n} questions (categories 1-4): evidence coverage of the top-K passages "
            "(mean share of a question's evidence turns shown / share of questions with all shown)"),
            "", "| method | " + " | ".join(f"K={k}" for k in LOCOMO_KS) + " |",
            "|---|" + "---|" * len(LOCOMO_KS)]
    for m in methods:
        rows.append(f"| {m} | " + " | ".join(f"{np.mean(share[m][k]):.3f} / {np.mean(full[m][k]):.3f}"
                                             for k in LOCOMO_KS) + " |")
    return "\n".join(rows)


def check(convs: Sequence[Any], emb: Embeddings, n_speed: int) -> str:
    """The model card's cosines and speed."""
    card = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    e = emb.encode(card)
    out = ["model card cosines (reference 0.6660 0.1046 0.1411): "
           + " ".join(f"{e[i] @ e[j]:.4f}" for i, j in ((0, 1), (0, 2), (1, 2)))]
    texts = [turn_text(t) for c in convs for t in c.turns][:n_speed]
    t0 = time.perf_counter()
    emb.encode(texts)
    dt = time.perf_counter() - t0
    out.append(f"speed: {len(texts)} LoCoMo turns in {dt:.1f} s = {len(texts) / dt:.1f} turns/s")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["paraphrase", "locomo", "check"])
    ap.add_argument("files", nargs="+", help="LoCoMo JSON files")
    ap.add_argument("--model", help="the model folder (default: where copage.dense finds it)")
    ap.add_argument("--cache", required=True, help="folder for the embedding cache")
    ap.add_argument("--split", default="dev", choices=["dev", "final"])
    ap.add_argument("--gap", type=int, default=CONDITIONS["2000"][1])
    ap.add_argument("--method", choices=METHODS, help="one method (required for --split final)")
    ap.add_argument("--speed-turns", type=int, default=512)
    a = ap.parse_args(argv)
    convs = [c for f in a.files for c in load_dataset(f).conversations]
    emb = Embeddings(a.model, a.cache)
    methods = (a.method,) if a.method else METHODS
    if a.what == "paraphrase":
        if a.split == "final" and not a.method:
            ap.error("the final split is measured for the chosen method only: --method")
        print(paraphrase(convs, emb, a.split, a.gap, methods))
    elif a.what == "locomo":
        print(locomo(convs, emb, methods))
    else:
        print(check(convs, emb, a.speed_turns))


if __name__ == "__main__":
    main()
