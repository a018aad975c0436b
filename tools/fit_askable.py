"""Fit ``askable``'s weights, and measure the fit leave-one-conversation-out.

``askable`` (``core/keywords/askable.py``) scores a term by ``contrast``'s score
plus ``beta`` times a weighted sum of its ``features.FEATURES``. Two ways to fit
the weights, both on LoCoMo-format files with pages cut as in the simulation
(``fixed_10``):

``--method routing`` (the shipped weights): coordinate ascent on the measure
itself, the mean routing_top1 of the training conversations (fixed_10 + LRU,
k = 5, placement end, the bookmark shape given: the shipped weights with
``--format compact --n-keywords 12 --bookmark-tokens 12 --bag``, the ninth round
of docs/keywords-record.md; the simulation's faults and the library's BM25 reader),
starting from ``contrast`` (all weights 0), trying each
weight in turn at +-0.25, 0.5, 1 (``digit`` is always 0: digits are never
routable alone), keeping a change only if it raises the objective, two rounds.
A conversation whose mean bookmark exceeds ``--max-tokens`` costs 10 points per
token over.

``--method logit``: a conditional logit (McFadden 1974: a softmax over each
page's candidate terms), fitted by Newton's method with an L2 penalty on
standardised features, on which of a page's terms share a word with a later
question whose evidence is in the page; ``beta`` is then the weight of that
score beside ``contrast``'s.

``--bag``: a fit is the mean of the fits that each leave one of its training
conversations out (in ``loco``, nested: four fits on three conversations per fold).
``--leave N``: ``loco`` over every N conversations held out.

``loco``: for each conversation, fit on the others, then score it with the real
simulation (``bench/bench_keywords.py``'s ``routing_with``); prints the fold's weights, its
training objective, the held-out routing_top1 / bookmark tokens, and the mean.
``fit``: fit on every conversation of FILES and write the weights module
(``--write``; by default print it). numpy only.

Run::

    L=../shared/data/locomo
    .venv/bin/python tools/fit_askable.py loco $L/locomo-sample.json $L/locomo-more.json
    .venv/bin/python tools/fit_askable.py loco $L/locomo-sample.json $L/locomo-more.json \\
        --method logit --beta 1
    .venv/bin/python tools/fit_askable.py fit $L/locomo-sample.json $L/locomo-more.json \\
        --format compact --n-keywords 12 --bookmark-tokens 12 --bag \\
        --write src/copage/core/keywords/askable_weights.py
"""

from __future__ import annotations

import argparse
import itertools
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))  # bench_keywords
from bench_keywords import routing_with, use_reader

from copage.core.bookmarks import get_format, make_bookmark
from copage.core.keywords.askable import AskableExtractor
from copage.core.keywords.contrast import ContrastExtractor
from copage.core.keywords.corpus import Corpus
from copage.core.keywords.discriminative import PageView
from copage.core.keywords.features import FEATURES
from copage.core.text import content_words
from copage.core.tokens import get_tokenizer
from copage.core.types import Page

CELL = ("fixed_10", "lru", 5, "contrast", "minimal", "end", "shuffled", 0)


@dataclass(frozen=True)
class Shape:
    """What a bookmark is made of: its format, the keywords offered, its token cap
    (``--format``, ``--n-keywords``, ``--bookmark-tokens``; the paper's by default)."""

    fmt: str = "minimal"
    n: int = 4
    cap: int | None = None


SHAPE = Shape()
GRID = (-1.0, -0.5, -0.25, 0.25, 0.5, 1.0)
FIXED_ZERO = ("digit",)


class _Preset(AskableExtractor):
    """``askable`` whose rank scores are given (the fast path of the fit)."""

    ranks: dict[str, float]

    def rank_terms(self, page: Page, corpus: Corpus, view: PageView) -> dict[str, float]:
        return self.ranks


@dataclass
class Prepared:
    """One conversation, analysed once: pages, faults, per-page term features."""

    conv: str
    pages: list[Page]
    faults: list[tuple[str, list[int], set[int]]]  # question, candidate pages, needed
    asked: dict[int, set[str]]  # page index -> words of questions about it
    corpus: Corpus
    ex: _Preset
    terms: dict[int, list[str]]
    base: dict[int, np.ndarray]  # contrast's score per term
    x: dict[int, np.ndarray]  # FEATURES per term


@contextmanager
def _recording(sink: list[tuple[str, list[int], set[int]]]) -> Iterator[type]:
    """Record every routing decision of the simulation; yields the Pager class used."""
    from copage.eval import simulation as simulate

    real_route, real_make = simulate.route, simulate.simulation_pager

    def route(question: str, books: Sequence[str], want: Any) -> Any:
        ids = [int(m.group(1)) - 1 for m in (re.match(r"\[p(\d+)", b) for b in books) if m]
        if len(ids) != len(books):
            raise SystemExit("fit_askable needs the minimal format: [pN:...]")
        sink.append((question, ids, {ids[i] for i in want}))
        return real_route(question, books, want)

    class Kept:  # the simulation's latest pager
        last: Any = None

    def make(*a: Any, **k: Any) -> Any:
        Kept.last = real_make(*a, **k)
        return Kept.last

    simulate.route, simulate.simulation_pager = route, make  # type: ignore[assignment]
    try:
        yield Kept
    finally:
        simulate.route, simulate.simulation_pager = real_route, real_make  # type: ignore[misc]


def prepare(files: Sequence[str]) -> list[Prepared]:
    """Every conversation of ``files``, with its faults under the simulation's cell."""
    from copage.eval.datasets import load_dataset
    from copage.eval.simulation import Cell, run_conversation

    out: list[Prepared] = []
    for path in files:
        for conv in load_dataset(path, seed=0).conversations:
            faults: list[tuple[str, list[int], set[int]]] = []
            with _recording(faults) as kept:
                run_conversation(conv, Cell(*CELL), {})
                pages = list(kept.last.pages)
            page_of = {t.id: p.index for p in pages for t in p.turns}
            asked: dict[int, set[str]] = {p.index: set() for p in pages}
            for probe in conv.probes:
                words = set(content_words(probe.question))
                for e in probe.evidence:
                    if e in page_of:
                        asked[page_of[e]] |= words
            corpus = Corpus.from_pages(pages)
            ex = _Preset(beta=0.0)  # ContrastExtractor.rank_terms: contrast's score alone
            terms, base, x = {}, {}, {}
            for p in pages:
                view = ex.view(p, corpus)
                b = ContrastExtractor.rank_terms(ex, p, corpus, view)
                f = ex.features(p, corpus, view)
                terms[p.index] = list(b)
                base[p.index] = np.array([b[t] for t in b], dtype=float)
                x[p.index] = np.array([f[t] for t in b], dtype=float).reshape(len(b),
                                                                             len(FEATURES))
            out.append(Prepared(conv.id, pages, faults, asked, corpus, ex, terms, base, x))
    return out


def keywords(prep: Prepared, w: np.ndarray, beta: float = 1.0) -> dict[int, tuple[str, ...]]:
    """Each page's ``SHAPE.n`` keywords under weights ``w`` (the extractor's own greedy
    choice)."""
    out: dict[int, tuple[str, ...]] = {}
    for p in prep.pages:
        s = prep.base[p.index] + beta * (prep.x[p.index] @ w)
        prep.ex.ranks = {t: round(float(v), 9) for t, v in zip(prep.terms[p.index], s,
                                                                 strict=True)}
        out[p.index] = prep.ex.extract(p, prep.corpus, SHAPE.n)
    return out


def routing(prep: Prepared, kws: dict[int, tuple[str, ...]]) -> tuple[float, float]:
    """(routing_top1, mean bookmark tokens) of these keywords: the simulation's reader."""
    from copage.eval.routing import route

    fmt, tok = get_format(SHAPE.fmt), get_tokenizer("o200k_base")
    books = {p.index: make_bookmark(p, kws[p.index], fmt, tok, SHAPE.cap) for p in prep.pages}
    credit = [route(q, [books[i].text for i in ids], {j for j, i in enumerate(ids) if i in need})
              .credit for q, ids, need in prep.faults]
    return sum(credit) / max(len(credit), 1), sum(b.tokens for b in books.values()) / len(books)


def objective(preps: Sequence[Prepared], w: np.ndarray, max_tokens: float) -> float:
    """Mean routing_top1, minus 10 per token over ``max_tokens`` on the worst conversation."""
    figures = [routing(p, keywords(p, w)) for p in preps]
    over = max(t for _, t in figures) - max_tokens
    return sum(r for r, _ in figures) / len(figures) - 10.0 * max(over, 0.0)


def fit_routing(preps: Sequence[Prepared], max_tokens: float, rounds: int = 2
                ) -> tuple[np.ndarray, float]:
    """Coordinate ascent of the weights on :func:`objective` from 0 (``contrast``)."""
    w = np.zeros(len(FEATURES))
    best = objective(preps, w, max_tokens)
    for _ in range(rounds):
        improved = False
        for j, name in enumerate(FEATURES):
            if name in FIXED_ZERO:
                continue
            for step in GRID:
                trial = w.copy()
                trial[j] += step
                value = objective(preps, trial, max_tokens)
                if value > best + 1e-9:
                    best, w, improved = value, trial, True
        if not improved:
            break
    return w, best


def fit_logit(preps: Sequence[Prepared], l2: float = 100.0, iters: int = 100) -> np.ndarray:
    """Conditional logit weights (raw feature scale): the mean log softmax probability of
    each page's asked-about terms, minus ``l2/2 |w|^2`` on standardised features."""
    groups = []
    for prep in preps:
        for p in prep.pages:
            terms = prep.terms[p.index]
            y = np.array([float(bool(set(t.split(" ")) & prep.asked[p.index])) for t in terms])
            if terms and y.sum() > 0:
                groups.append((prep.x[p.index], y / y.sum()))
    allx = np.vstack([x for x, _ in groups])
    mu, sd = allx.mean(0), allx.std(0)
    sd[sd == 0] = 1.0
    gz = [((x - mu) / sd, y) for x, y in groups]
    w = np.zeros(allx.shape[1])
    for _ in range(iters):
        grad, hess = l2 * w, l2 * np.eye(len(w))
        for z, y in gz:
            s = z @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            grad += z.T @ (p - y)
            zc = z - p @ z
            hess += (zc * p[:, None]).T @ zc
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w / sd


BAG = False
"""``--bag``: a fit is the mean of the fits that each leave one training conversation out."""


def fit(preps: Sequence[Prepared], method: str, max_tokens: float, l2: float
        ) -> tuple[np.ndarray, float]:
    if BAG and len(preps) > 2:
        ws = [fit_one([o for o in preps if o is not p], method, max_tokens, l2)[0]
              for p in preps]
        w = np.mean(ws, axis=0)
        return w, (objective(preps, w, max_tokens) if method == "routing" else float("nan"))
    return fit_one(preps, method, max_tokens, l2)


def fit_one(preps: Sequence[Prepared], method: str, max_tokens: float, l2: float
            ) -> tuple[np.ndarray, float]:
    if method == "logit":
        return fit_logit(preps, l2), float("nan")
    return fit_routing(preps, max_tokens)


def weights_module(w: np.ndarray, convs: Sequence[str], method: str) -> str:
    rows = "\n".join(f"    {round(float(v), 6)!r},  # {name}"
                     for name, v in zip(FEATURES, w, strict=True))
    how = f"--method {method} --format {SHAPE.fmt} --n-keywords {SHAPE.n}"
    how += f" --bookmark-tokens {SHAPE.cap}" if SHAPE.cap is not None else ""
    how += " --bag" if BAG else ""
    return (
        '"""``askable``\'s weights, one per ``features.FEATURES``.\n\n'
        f"Written by ``tools/fit_askable.py fit`` with\n``{how}``\non "
        f"{', '.join(convs)}. Do not edit by hand: fit again.\n"
        '"""\n\n'
        "ASKABLE_WEIGHTS: tuple[float, ...] = (\n" + rows + "\n)\n"
    )


def parse_grid(text: str) -> list[dict[str, float]]:
    """``"penalty=0,1;rarity=0.25"`` -> every combination, as option dicts."""
    import itertools

    axes: list[list[tuple[str, float]]] = []
    for item in filter(None, text.split(";")):
        name, eq, values = item.partition("=")
        if not eq:
            raise SystemExit(f"--grid item {item!r} is not name=v1,v2")
        axes.append([(name, float(v)) for v in values.split(",")])
    return [dict(combo) for combo in itertools.product(*axes)] if axes else [{}]


def choose_options(files: Sequence[str], base: dict[str, Any], grid: list[dict[str, float]],
                   held: Sequence[str]) -> dict[str, float]:
    """The grid point with the best mean routing_top1 on the conversations not in
    ``held`` (``SHAPE``'s bookmarks); ``{}`` when there is no grid."""
    if grid == [{}]:
        return {}

    def train(opt: dict[str, float]) -> float:
        row = routing_with(files, "askable", {**base, **opt}, "fixed_10", "lru", 5, SHAPE.fmt,
                           SHAPE.n, bookmark_tokens=SHAPE.cap)
        return sum(v[0] for c, v in row.items() if c not in held) / (len(row) - len(held))

    return max(grid, key=train)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("cmd", choices=("loco", "fit"))
    p.add_argument("files", nargs="+", help="LoCoMo-format files")
    p.add_argument("--method", choices=("routing", "logit"), default="routing")
    p.add_argument("--beta", type=float, default=1.0, help="weight of the fitted score")
    p.add_argument("--l2", type=float, default=100.0, help="logit: L2 penalty")
    p.add_argument("--max-tokens", type=float, default=12.0)
    p.add_argument("--write", default="", help="fit: path of the weights module")
    p.add_argument("--reader", default="library", choices=("library", "stem"),
                   help="routing reader of the fit and the scores (bench_keywords --reader)")
    p.add_argument("--format", default="minimal", help="bookmark format")
    p.add_argument("--n-keywords", type=int, default=4, help="keywords offered per bookmark")
    p.add_argument("--bookmark-tokens", type=int, default=None,
                   help="each bookmark's token cap (PagerConfig.bookmark_tokens)")
    p.add_argument("--grid", default="",
                   help='loco: also choose askable options per fold on its training '
                        'conversations, e.g. "penalty=0,0.5,1;rarity=0.25,0.75"')
    p.add_argument("--bag", action="store_true",
                   help="each fit is the mean of the fits leaving one of its training "
                        "conversations out (steadier than one greedy ascent)")
    p.add_argument("--leave", type=int, default=1,
                   help="loco: conversations held out per fold (2: every pair, fitted on "
                        "the others; the fold's score is the mean over its pair)")
    p.add_argument("--fit-paper-shape", action="store_true",
                   help="loco: fit each fold with the paper's shape (minimal, 4, no cap), "
                        "score it with the one given")
    args = p.parse_args()
    use_reader(args.reader)
    global SHAPE, BAG
    SHAPE = Shape(args.format, args.n_keywords, args.bookmark_tokens)
    BAG = args.bag
    preps = prepare(args.files)
    if args.cmd == "fit":
        w, obj = fit(preps, args.method, args.max_tokens, args.l2)
        text = weights_module(w, [pp.conv for pp in preps], args.method)
        if args.write:
            Path(args.write).write_text(text)
            print(f"wrote {args.write} (training objective {obj:.3f})")
        else:
            print(text)
        return
    print(f"fixed_10 + LRU, k=5, placement end, {SHAPE.fmt}, {SHAPE.n} keywords, cap "
          f"{SHAPE.cap}; method {args.method}, beta {args.beta:g}, reader {args.reader}")
    if not 1 <= args.leave < len(preps):
        raise SystemExit(f"--leave must be 1..{len(preps) - 1}, got {args.leave}")
    scores: list[float] = []
    for held in itertools.combinations(preps, args.leave):
        names = [h.conv for h in held]
        train = [o for o in preps if o not in held]
        shape, SHAPE = SHAPE, (Shape() if args.fit_paper_shape else SHAPE)
        w, obj = fit(train, args.method, args.max_tokens, args.l2)
        SHAPE = shape
        base = {"weights": tuple(map(float, w)), "beta": args.beta}
        options = choose_options(args.files, base, parse_grid(args.grid), names)
        r = routing_with(args.files, "askable", {**base, **options},
                         "fixed_10", "lru", 5, SHAPE.fmt, SHAPE.n, only=names,
                         bookmark_tokens=SHAPE.cap)
        scores.append(sum(r[n][0] for n in names) / len(names))
        tokens = sum(r[n][2] for n in names) / len(names)
        shown = ", ".join(f"{n} {v:+g}" for n, v in zip(FEATURES, w, strict=True) if v)
        shown += "".join(f"; {k} {v:g}" for k, v in options.items())
        print(f"held out {', '.join(names)}: train {obj:.3f}, held-out {scores[-1]:.3f} / "
              f"{tokens:.1f} tokens ({sum(r[n][1] for n in names)} faults); weights: {shown}")
    print(f"mean of held-out: {sum(scores) / len(scores):.3f}")


if __name__ == "__main__":
    main()
