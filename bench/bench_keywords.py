"""Keyword extractors: per-page cost, and how well their bookmarks tell pages apart.

Two reports:

``cost`` (the default): per-page extraction time against corpora of 100 and
10,000 pages, and the time of extracting the same page again (a stale
bookmark's refresh). ``extract`` with
a live corpus should cost O(page), not O(conversation): the time per page should
stay about the same when the corpus grows 100-fold.

``--reader stem`` measures a reader that stems the words of questions and
bookmarks (:func:`light_stem`) instead of the library's BM25 words.

``routing``: ``routing_top1`` (see ``docs/simulation.md``) and mean bookmark
tokens per extractor, with the same simulation as ``copage simulate``
(placement ``end``, batch keywords), plus a ``fulltext`` ceiling row where each
bookmark is its page's whole text (the same BM25 reader over full pages).
``--conversations`` keeps only some conversations of a file (a dev / held-out
split); ``--seeds`` generates a preset once per seed and pools the faults.
``packed:base=contrast;tokens=12`` packs another extractor's ranked keywords
under a token budget (:class:`PackedExtractor`).
An extractor may carry options, ``name:option=value;option=value``
(``contrast:disclosure=0`` is ``contrast`` without its disclosure cue).

Run::

    .venv/bin/python bench/bench_keywords.py cost
    .venv/bin/python bench/bench_keywords.py routing DATA.json --conversations conv-26
    .venv/bin/python bench/bench_keywords.py routing ablation --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import gc
import random
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from typing import Any

from copage.core.bookmarks import FORMATS, get_format
from copage.core.keywords import Corpus, get_extractor
from copage.core.types import Page, Turn, page_id, render_turns

WORDS = [f"word{i}" for i in range(5000)] + ["budget", "medical", "appointment", "Lisbon"]
ALL_EXTRACTORS = ("random", "heuristic", "tfidf", "discriminative", "generic", "contrast",
                  "askable")


def synthetic_page(index: int, rng: random.Random, turns: int = 10, words: int = 20) -> Page:
    """A page of ``turns`` turns of ``words`` random words (some capitalised)."""
    ts = tuple(
        Turn(
            id=f"t{index}-{i}",
            role="user",
            speaker="Anna" if i % 2 else "Ben",
            text=" ".join(rng.choice(WORDS) for _ in range(words)) + f" ${rng.randint(1, 999)}.",
        )
        for i in range(turns)
    )
    text = render_turns(ts)
    return Page(page_id(index), index, ts, text, len(text) // 4)


def cost(extractors: Sequence[str]) -> None:
    """Per-page extraction time against a small and a large corpus."""
    rng = random.Random(0)
    probes = [synthetic_page(100_000 + i, rng) for i in range(50)]
    print(f"{'extractor':15s} {'corpus pages':>12s} {'ms/page':>9s} {'ms/turn':>9s} "
          f"{'refresh ms':>10s}")
    for size in (100, 10_000):
        corpus = Corpus()
        for i in range(size):
            page = synthetic_page(i, rng)
            corpus.add(page.id, page.text)
        gc.collect()
        gc.freeze()  # keep the corpus out of GC scans: we time extraction, not the collector
        for name in extractors:
            ex = get_extractor(name)
            taken = {"budget": 3, "medical": 2}
            start = time.perf_counter()
            for page in probes:
                ex.extract(page, corpus, 4, taken=taken)
            ms = (time.perf_counter() - start) * 1000 / len(probes)
            start = time.perf_counter()  # again: a stale bookmark's refresh
            for page in probes:
                ex.extract(page, corpus, 4, taken=taken)
            again = (time.perf_counter() - start) * 1000 / len(probes)
            per_turn = ms / len(probes[0].turns)
            print(f"{name:15s} {size:12d} {ms:9.3f} {per_turn:9.4f} {again:10.3f}")
        gc.unfreeze()


def parse_extractor(spec: str) -> tuple[str, dict[str, object]]:
    """``"contrast:disclosure=0;penalty=1"`` -> ``("contrast", {"disclosure": 0.0, "penalty": 1.0})``."""
    name, _, rest = spec.partition(":")
    options: dict[str, object] = {}
    for item in filter(None, rest.split(";")):
        key, eq, value = item.partition("=")
        if not eq:
            raise SystemExit(f"extractor option {item!r} of {spec!r} is not option=value")
        try:
            options[key] = int(value) if key == "seed" else float(value)
        except ValueError:
            options[key] = value
    return name, options


@dataclass(frozen=True)
class OptionCell:
    """A simulation cell whose extractor gets ``options`` (``Cell.config`` passes none)."""

    cell: Any
    options: tuple[tuple[str, object], ...]
    n_keywords: int = 4
    bookmark_tokens: int | None = None

    def config(self, extractors: Any = None) -> Any:
        return replace(self.cell.config(extractors), keyword_options=dict(self.options),
                       n_keywords=self.n_keywords, bookmark_tokens=self.bookmark_tokens)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.cell, name)


_VOWEL = re.compile(r"[aeiouy]")


@cache
def light_stem(word: str) -> str:
    """A light suffix stemmer (Porter 1980 step 1, simplified): possessive, plural,
    ``-ed``/``-ing``, a final ``e``; ``painting``/``painted``/``paints`` -> ``paint``,
    ``hikes``/``hiking`` -> ``hik``. For ``--reader stem`` only (a measurement)."""
    w = word
    if len(w) <= 3 or not w.replace("'", "").isalpha():
        return w
    w = w.removesuffix("'s")
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "y"
    elif w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        stem = w[: -len(suffix)]
        if w.endswith(suffix) and len(stem) >= 3 and _VOWEL.search(stem):
            w = stem
            if w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]
            break
    if w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


def use_reader(reader: str) -> None:
    """``library``: the routing reader as shipped; ``stem``: its content words, stemmed
    by :func:`light_stem` (questions, bookmarks and the full-text ceiling alike)."""
    from copage.core.text import content_words
    from copage.eval import routing as routing_mod

    if reader == "library":
        return
    if reader != "stem":
        raise SystemExit(f"unknown reader {reader!r}; valid: library, stem")

    @lru_cache(maxsize=65536)
    def terms(text: str) -> Counter[str]:
        return Counter(light_stem(w) for w in content_words(text))

    routing_mod._terms = terms  # type: ignore[assignment]


class PackedExtractor:
    """``packed``: another extractor's ranked keywords taken while the ``minimal``
    bookmark stays within ``tokens`` (o200k_base), skipping any that would not fit;
    ``depth``: how many ranked keywords are tried, ``most``: how many are kept;
    ``single=1``: one-word keywords
    only; ``dedup=1``: skip a keyword sharing a :func:`light_stem` with a chosen
    one. A measurement of packing under a token budget (``docs/keywords-record.md``)."""

    name = "packed"
    uses_corpus = True
    refresh_with_corpus = True

    def __init__(self, base: str = "contrast", tokens: float = 12, depth: float = 8,
                 most: float = 8, single: float = 0, dedup: float = 0,
                 fmt: str = "minimal") -> None:
        from copage.core.tokens import get_tokenizer

        self.base = get_extractor(base)
        self.tokens, self.depth, self.most = int(tokens), int(depth), int(most)
        self.single, self.dedup = bool(single), bool(dedup)
        self.tok = get_tokenizer("o200k_base")
        self.fmt = get_format(fmt)

    def _pack(self, page: Page, ranked: Sequence[str]) -> tuple[str, ...]:
        out: list[str] = []
        stems: set[str] = set()
        for kw in ranked[: self.depth]:
            st = {light_stem(w.lower().removesuffix("'s")) for w in kw.split()}
            if (self.single and " " in kw) or (self.dedup and st & stems):
                continue
            if self.tok.count(self.fmt.render(page, (*out, kw))) > self.tokens:
                continue
            out.append(kw)
            stems |= st
            if len(out) == self.most:
                break
        return tuple(out)

    def extract(self, page: Page, corpus: Corpus, n: int, *,
                taken: Any = None) -> tuple[str, ...]:
        return self._pack(page, self.base.extract(page, corpus, max(n, self.depth), taken=taken))

    def extract_all(self, pages: Sequence[Page], n: int) -> dict[Any, tuple[str, ...]]:
        ranked = self.base.extract_all(pages, max(n, self.depth))  # type: ignore[attr-defined]
        return {p.id: self._pack(p, ranked[p.id]) for p in pages}


def register_packed() -> None:
    from copage.core.keywords import EXTRACTORS

    if "packed" not in EXTRACTORS.names():
        EXTRACTORS.register("packed", lambda **o: PackedExtractor(**o))  # type: ignore[arg-type]


class FullTextFormat:
    """The ceiling: a "bookmark" that is the page's whole text."""

    name = "fulltext"

    def render(self, page: Page, keywords: tuple[str, ...]) -> str:
        return page.text


def routing(spec: str, seeds: Sequence[int], conversations: Sequence[str],
            extractors: Sequence[str], boundary: str, policy: str, k: int, fmt: str,
            n_keywords: int = 4, bookmark_tokens: int | None = None) -> None:
    """routing_top1 and bookmark tokens per extractor, pooled over seeds."""
    from copage.eval.datasets import load_dataset
    from copage.eval.simulation import Cell, ConversationRun, run_conversation

    if "fulltext" not in FORMATS:
        FORMATS.register("fulltext", lambda **_: FullTextFormat())
    rows: list[tuple[str, str]] = [(name, fmt) for name in extractors]
    rows.append(("heuristic", "fulltext"))
    runs: dict[tuple[str, str], list[ConversationRun]] = {r: [] for r in rows}
    n_conv = n_probes = 0
    for seed in seeds:
        data = load_dataset(spec, seed=seed)
        convs = data.conversations
        if conversations:
            missing = sorted(set(conversations) - {c.id for c in convs})
            if missing:
                raise SystemExit(f"no conversation {missing} in {spec}; "
                                 f"have {[c.id for c in convs]}")
            convs = tuple(c for c in convs if c.id in conversations)
        data = replace(data, conversations=convs)
        n_conv += len(convs)
        n_probes += data.probes
        for name, f in rows:
            memo: dict[tuple[Any, ...], Any] = {}  # one per row: its key ignores options
            base, options = parse_extractor(name)
            cell: Any = Cell(boundary, policy, k, base, f, "end", "shuffled", seed)
            if options or n_keywords != 4 or bookmark_tokens is not None:
                cell = OptionCell(cell, tuple(sorted(options.items())), n_keywords,
                                  bookmark_tokens if f != "fulltext" else None)
            runs[(name, f)].extend(run_conversation(c, cell, memo) for c in convs)
    print(f"data {spec} seeds {','.join(map(str, seeds))} "
          f"conversations {','.join(conversations) or 'all'}: {n_conv} conversations, "
          f"{n_probes} probes; {boundary} + {policy}, k={k}, placement end")
    print(f"{'extractor':22s} {'format':9s} {'faults':>6s} {'routing_top1':>12s} "
          f"{'chance':>7s} {'bookmark_tokens':>15s}")
    for name, f in rows:
        outs = [o for r in runs[(name, f)] for o in r.outcomes if o.routing is not None]
        toks = [t for r in runs[(name, f)] for t in r.bookmark_tokens]
        top1 = sum(o.routing for o in outs if o.routing is not None) / max(len(outs), 1)
        chance = sum(o.chance for o in outs if o.chance is not None) / max(len(outs), 1)
        label = "(full text)" if f == "fulltext" else name
        print(f"{label:22s} {f:9s} {len(outs):6d} {top1:12.3f} {chance:7.3f} "
              f"{sum(toks) / max(len(toks), 1):15.1f}")


def conversation_routing(files: Sequence[str], spec: str, boundary: str, policy: str,
                         k: int, fmt: str, n_keywords: int = 4,
                         bookmark_tokens: int | None = None
                         ) -> dict[str, tuple[float, int, float]]:
    """Per conversation of ``files``: (routing_top1, faults, mean bookmark tokens) of ``spec``."""
    base, options = parse_extractor(spec)
    return routing_with(files, base, options, boundary, policy, k, fmt, n_keywords,
                        bookmark_tokens=bookmark_tokens)


def routing_with(files: Sequence[str], base: str, options: dict[str, object], boundary: str,
                 policy: str, k: int, fmt: str, n_keywords: int = 4,
                 only: Sequence[str] = (), bookmark_tokens: int | None = None
                 ) -> dict[str, tuple[float, int, float]]:
    """:func:`conversation_routing` with the extractor's options given as objects
    (``tools/fit_askable.py`` passes fitted weights); ``only``: these conversations."""
    from copage.eval.datasets import load_dataset
    from copage.eval.simulation import Cell, run_conversation

    out: dict[str, tuple[float, int, float]] = {}
    for path in files:
        for conv in load_dataset(path, seed=0).conversations:
            if only and conv.id not in only:
                continue
            cell: Any = Cell(boundary, policy, k, base, fmt, "end", "shuffled", 0)
            if options or n_keywords != 4 or bookmark_tokens is not None:
                cell = OptionCell(cell, tuple(sorted(options.items())), n_keywords,
                                  bookmark_tokens)
            run = run_conversation(conv, cell, {})
            credit = [o.routing for o in run.outcomes if o.routing is not None]
            toks = run.bookmark_tokens
            out[conv.id] = (sum(credit) / max(len(credit), 1), len(credit),
                            sum(toks) / max(len(toks), 1))
    return out


def loco(files: Sequence[str], specs: Sequence[str], boundary: str, policy: str, k: int,
         fmt: str, max_tokens: float, n_keywords: int = 4,
         bookmark_tokens: int | None = None) -> None:
    """Leave-one-conversation-out selection of an extractor (with its options).

    For each conversation: the spec with the best mean routing_top1 over the other
    conversations (bookmarks of at most ``max_tokens`` tokens there) is chosen and
    scored on it. Prints every spec's per-conversation figures, each fold's
    choice, and the mean of the held-out figures.
    """
    table = {spec: conversation_routing(files, spec, boundary, policy, k, fmt, n_keywords,
                                        bookmark_tokens)
             for spec in specs}
    convs = list(next(iter(table.values())))
    print(f"{boundary} + {policy}, k={k}, placement end, {fmt}, {n_keywords} keywords; "
          "routing_top1 / bookmark tokens")
    print(f"{'spec':44s} " + " ".join(f"{c:>13s}" for c in convs) + f" {'mean':>6s}")
    for spec, row in table.items():
        mean = sum(v[0] for v in row.values()) / len(row)
        print(f"{spec:44s} " + " ".join(f"{row[c][0]:6.3f}/{row[c][2]:5.1f}" for c in convs)
              + f" {mean:6.3f}")
    held: list[float] = []
    for c in convs:
        def train(spec: str, c: str = c) -> float:
            rest = [v for cc, v in table[spec].items() if cc != c]
            if max(v[2] for v in rest) > max_tokens:
                return -1.0
            return sum(v[0] for v in rest) / len(rest)
        best = max(specs, key=train)
        held.append(table[best][c][0])
        print(f"held out {c}: chosen {best} (train {train(best):.3f}) -> {table[best][c][0]:.3f}")
    print(f"mean of held-out: {sum(held) / len(held):.3f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = p.add_subparsers(dest="report")
    c = sub.add_parser("cost", help="per-page and per-turn extraction time")
    c.add_argument("--extractors", default=",".join(ALL_EXTRACTORS))
    r = sub.add_parser("routing", help="routing_top1 and bookmark tokens per extractor")
    r.add_argument("data", help="LoCoMo-format file or preset (ablation, controlled)")
    r.add_argument("--seeds", default="0", help="comma-separated generator / order seeds")
    r.add_argument("--conversations", default="", help="comma-separated sample ids to keep")
    r.add_argument("--extractors", default=",".join(ALL_EXTRACTORS))
    r.add_argument("--boundary", default="fixed_10")
    r.add_argument("--policy", default="lru")
    r.add_argument("-k", type=int, default=5)
    r.add_argument("--format", default="minimal")
    v = sub.add_parser("loco", help="leave-one-conversation-out choice of an extractor")
    v.add_argument("files", nargs="+", help="LoCoMo-format files (every conversation is a fold)")
    v.add_argument("--extractors", default=",".join(ALL_EXTRACTORS),
                   help="candidate specs, comma-separated (name:option=value;...)")
    v.add_argument("--boundary", default="fixed_10")
    v.add_argument("--policy", default="lru")
    v.add_argument("-k", type=int, default=5)
    v.add_argument("--format", default="minimal")
    v.add_argument("--max-tokens", type=float, default=12.0,
                   help="a spec whose mean bookmark exceeds this on a training set is not chosen")
    for q in (r, v):
        q.add_argument("--n-keywords", type=int, default=4, help="keywords per bookmark")
        q.add_argument("--bookmark-tokens", type=int, default=None,
                       help="each bookmark's token cap (PagerConfig.bookmark_tokens; "
                            "default none, the paper's)")
        q.add_argument("--reader", default="library", choices=("library", "stem"),
                       help="routing reader: the library's BM25 words, or them stemmed")
    args = p.parse_args()
    use_reader(getattr(args, "reader", "library"))
    register_packed()
    if args.report == "loco":
        loco(args.files, [x for x in args.extractors.split(",") if x], args.boundary,
             args.policy, args.k, args.format, args.max_tokens, args.n_keywords,
             args.bookmark_tokens)
        return
    if args.report in (None, "cost"):
        cost(getattr(args, "extractors", ",".join(ALL_EXTRACTORS)).split(","))
        return

    def split(s: str) -> list[str]:
        return [x for x in s.split(",") if x]

    routing(args.data, [int(s) for s in split(args.seeds)], split(args.conversations),
            split(args.extractors), args.boundary, args.policy, args.k, args.format,
            args.n_keywords, args.bookmark_tokens)


if __name__ == "__main__":
    main()
