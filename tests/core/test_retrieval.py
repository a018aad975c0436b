"""BM25 against an independent reference and by hand; word overlap; top-1 credit."""

from __future__ import annotations

import math
import random

import pytest

from copage.core.retrieval import (
    BM25Index,
    bm25_idf,
    bm25_scores,
    rank_top1_credit,
    tied_top,
    top1,
    word_overlap_scores,
)


def reference_bm25(query: list[str], docs: list[list[str]], k1: float, b: float) -> list[float]:
    """Direct transcription of Robertson & Zaragoza (2009) eq. 3.15 with the Lucene IDF."""
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    out = []
    for d in docs:
        s = 0.0
        for t in query:
            df = sum(1 for e in docs if t in e)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            f = d.count(t)
            if f == 0:  # no term: contributes 0 (and 0/0 when k1 == 0)
                continue
            s += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(d) / avgdl))
        out.append(s)
    return out


@pytest.mark.parametrize("seed", range(20))
def test_bm25_matches_reference_on_random_corpora(seed: int) -> None:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(rng.randint(3, 30))]
    docs = [
        [rng.choice(vocab) for _ in range(rng.randint(0, 25))] for _ in range(rng.randint(1, 15))
    ]
    if not any(docs):
        docs[0] = ["w0"]
    query = [rng.choice(vocab + ["absent"]) for _ in range(rng.randint(1, 6))]
    k1, b = rng.choice([(1.5, 0.75), (1.2, 0.5), (0.0, 0.0), (2.0, 1.0)])
    got = BM25Index(docs, k1=k1, b=b).scores(query)
    assert got == pytest.approx(reference_bm25(query, docs, k1, b), rel=1e-9, abs=1e-12)


def test_bm25_by_hand() -> None:
    docs = [["a", "b"], ["b", "b", "c", "d"]]
    # N=2, avgdl=3. idf(a)=ln(1+1.5/1.5)=ln 2; idf(b)=ln(1+0.5/2.5)=ln 1.2.
    a_doc0 = math.log(2) * 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / 3))
    b_doc0 = math.log(1.2) * 1 * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / 3))
    b_doc1 = math.log(1.2) * 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 4 / 3))
    assert bm25_scores(["a", "b"], docs) == pytest.approx([a_doc0 + b_doc0, b_doc1])
    assert bm25_idf(2, 1) == pytest.approx(math.log(2))
    assert BM25Index(docs).df("b") == 2


def test_bm25_edge_cases() -> None:
    assert BM25Index([]).scores(["a"]) == []
    assert BM25Index([[], []]).scores(["a"]) == [0.0, 0.0]
    with pytest.raises(TypeError, match="not a string"):
        BM25Index([["a"]]).scores("a")
    with pytest.raises(TypeError, match="list of tokens"):
        BM25Index(["abc"])
    with pytest.raises(ValueError, match="b must be"):
        BM25Index([["a"]], b=2.0)


def test_word_overlap() -> None:
    docs = [["thai", "garden", "the"], ["garden"], [], ["the", "a"]]
    got = word_overlap_scores(["Thai", "garden", "the", "garden"], docs)
    assert got == pytest.approx([2 / math.sqrt(2), 1.0, 0.0, 0.0])


def test_top1_credit_shares_ties() -> None:
    assert rank_top1_credit([0.1, 0.9, 0.3], {1}) == 1.0
    assert rank_top1_credit([0.1, 0.9, 0.3], {0, 2}) == 0.0
    assert rank_top1_credit([0.5, 0.5, 0.1, 0.5], {0}) == pytest.approx(1 / 3)
    assert rank_top1_credit([0.5, 0.5, 0.1, 0.5], {0, 3}) == pytest.approx(2 / 3)
    assert rank_top1_credit([0.0, 0.0, 0.0, 0.0], {2}) == 0.25
    assert rank_top1_credit([], set()) == 0.0
    with pytest.raises(ValueError, match="out of range"):
        rank_top1_credit([1.0], {3})


# --- the one BM25: against bm25s, incrementally, one-shot, and the one tie rule -------------

VOCAB = ["peanut", "allergy", "budget", "lisbon", "dentist", "thursday", "rust", "yoga",
         "sister", "deadline", "grant", "beagle", "flight", "hotel", "friday"]


def _bm25s_lucene(query: list[str], docs: list[list[str]], k1: float, b: float) -> list[float]:
    """Scores from the ``bm25s`` package (method "lucene", float64), an independent reference."""
    bm25s = pytest.importorskip("bm25s")
    vocab = {t: i for i, t in enumerate(sorted({t for d in docs for t in d} | set(query)))}
    model = bm25s.BM25(method="lucene", k1=k1, b=b, dtype="float64")
    ids = [[vocab[t] for t in d] for d in docs]
    model.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
    known = [t for t in query if t in model.vocab_dict]
    if not known:
        return [0.0] * len(docs)
    return [float(x) for x in model.get_scores(known)]


@pytest.mark.parametrize("seed", range(25))
def test_bm25_equals_bm25s_lucene_times_k1_plus_1(seed: int) -> None:
    rng = random.Random(seed)
    docs = [rng.choices(VOCAB, k=rng.randint(1, 30)) for _ in range(rng.randint(1, 25))]
    query = rng.choices(VOCAB + ["absent"], k=rng.randint(1, 6))  # repeats included
    k1, b = rng.choice([(1.5, 0.75), (1.2, 0.5), (0.9, 0.4), (2.0, 1.0), (1.5, 0.0)])
    ref = [(k1 + 1) * s for s in _bm25s_lucene(query, docs, k1, b)]
    for got in (BM25Index(docs, k1=k1, b=b).scores(query), bm25_scores(query, docs, k1, b)):
        assert got == pytest.approx(ref, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("seed", range(30))
def test_incremental_index_equals_a_rebuilt_one_through_adds_and_removes(seed: int) -> None:
    rng = random.Random(seed)
    texts = [rng.choices(VOCAB, k=rng.randint(1, 30)) for _ in range(20)]
    index: BM25Index[int] = BM25Index()
    present: set[int] = set()
    for _ in range(60):
        i = rng.randrange(len(texts))
        if i in present and rng.random() < 0.5:
            index.remove(i)
            present.discard(i)
        else:
            index.add(i, texts[i])
            present.add(i)
        query = rng.choices(VOCAB, k=3)
        order = sorted(present)
        ref = BM25Index([texts[j] for j in order]).scores(query) if order else []
        got = index.score_map(query)
        assert set(got) <= present
        for pos, j in enumerate(order):
            assert got.get(j, 0.0) == pytest.approx(ref[pos], rel=1e-12, abs=1e-12)
            assert index.score(query, j) == pytest.approx(ref[pos], rel=1e-12, abs=1e-12)


def test_replacing_a_document_updates_the_statistics() -> None:
    index: BM25Index[str] = BM25Index()
    index.set("a", ["peanut", "allergy"])
    index.set("b", ["peanut"])
    index.set("a", ["budget"])  # replaced: df(peanut) is 1 again
    assert (index.df("peanut"), index.df("allergy"), len(index)) == (1, 0, 2)
    assert index.scores(["peanut"]) == BM25Index([["budget"], ["peanut"]]).scores(["peanut"])
    counts = {"lisbon": 2}
    index.set("c", counts)  # term counts are accepted and copied
    counts["lisbon"] = 99
    assert index.score(["lisbon"], "c") == BM25Index([["budget"], ["peanut"], ["lisbon"] * 2]).scores(
        ["lisbon"])[2]


def test_one_tie_rule() -> None:
    index: BM25Index[int] = BM25Index()
    index.add(4, ["peanut", "allergy"])
    index.add(2, ["peanut", "allergy"])
    assert index.best(["peanut"]) == (2, index.score(["peanut"], 2))  # ties: smallest key
    assert index.best(["zebra"]) == (None, 0.0)
    assert BM25Index().best(["peanut"]) == (None, 0.0)
    almost = [1.0, 1.0 + 1e-15, 0.5]  # equal up to summation order: tied
    assert tied_top(almost) == [0, 1] and top1(almost) == 0
    assert rank_top1_credit(almost, {1}) == 0.5
    assert top1([]) == -1 and tied_top([]) == []
