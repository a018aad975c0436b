"""``copage bench``: the paper's experiments as one command, with a report (see ``docs/bench.md``)."""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from copage.cli.simulate import (
    DEFAULT_BOUNDARIES,
    DEFAULT_FORMAT,
    DEFAULT_K,
    DEFAULT_KEYWORDS,
    DEFAULT_POLICIES,
    _list,
)

SYNTHETIC = ("controlled", "ablation")
"""What ``--dataset synthetic`` (the default) stands for."""


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``copage bench``."""
    p = sub.add_parser(
        "bench", help="run the paper's experiments and write a report",
        description="Run benchmark experiments (default: every experiment that needs no "
        "model; with --model, all) and write summary.json, tables, figures and report.html "
        "into --out. Running again with the same --out resumes.",
    )
    p.add_argument("experiment", nargs="?", default=None,
                   help="one experiment or a comma list (main, judges, paging, topology, formats, "
                   "specificity, generators, selection, failures, nll); default: all that can run")
    p.add_argument("--dataset", default="synthetic",
                   help="comma list of presets (synthetic = controlled + ablation; controlled, "
                   "ablation, ablation-deepseek) or LoCoMo-format files (default: synthetic)")
    p.add_argument("--locomo", action="append", default=[], metavar="PATH",
                   help="add a LoCoMo file to the datasets (repeatable)")
    p.add_argument("--model", default=None, help="model spec, e.g. openai:gpt-4o-mini")
    p.add_argument("--judges", default=None,
                   help="comma list of judge model specs; 'none' scores without an LLM judge "
                   "(LoCoMo F1 and exact match only); default: the answering model judges")
    p.add_argument("--concurrency", type=int, default=None,
                   help="model calls in flight (default: 4; use 1 for a single local server, "
                   "whose prompt cache then reuses each probe's shared prefix)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds per model call attempt (default: 300, for slow local models)")
    p.add_argument("--probes", type=int, default=None, help="probes per dataset (seeded sample)")
    p.add_argument("--methods", default=None, help="comma list of methods for main/judges")
    p.add_argument("--budget", type=int, default=None,
                   help="prompt tokens per probe for every method of main/judges (default: "
                   "2048); main also draws coverage at 1024, 2048, 4096 and 8192")
    p.add_argument("--window", type=int, default=None, metavar="N",
                   help="recent turns of truncation and the paper's retrieval rows (bm25, "
                   "word_overlap, search_tool over sessions); default: 20")
    p.add_argument("--top-k", type=int, default=None, metavar="K",
                   help="cap on the units a retrieval baseline adds (the paper: 3); default: "
                   "none, the budget decides")
    p.add_argument("--units", default=None, metavar="LIST",
                   help="units of the retrieval baselines run behind copage's resident window "
                   "in main's default method list, e.g. fixed_10,fixed_5 (rows bm25@fixed_10, "
                   "...; any boundary name, sessions = session); the paper's rows over "
                   "sessions behind --window turns are always run; default: fixed_10,fixed_5")
    p.add_argument("--categories", default=None, metavar="LIST",
                   help="only probes of these LoCoMo categories, e.g. 1,2,4 (1 multi-hop, "
                   "2 temporal, 3 open-domain, 4 single-hop, 5 adversarial), filtered before "
                   "the seeded --probes sample; default: all")
    p.add_argument("--prompt-style", default="paper", choices=["paper", "compact"],
                   help="prompt style of the bookmark methods (paper: the paper's setup; "
                   "compact: for small models, see docs/loop.md); default: paper")
    p.add_argument("--seed", type=int, default=0, help="default: 0")
    p.add_argument("--out", default=None, help="run directory (default: runs/<timestamp>)")
    p.add_argument("--boundary", default=DEFAULT_BOUNDARIES, help=f"default: {DEFAULT_BOUNDARIES}")
    p.add_argument("--policy", default=DEFAULT_POLICIES, help=f"default: {DEFAULT_POLICIES}")
    p.add_argument("-k", default=DEFAULT_K, help=f"resident pages (default: {DEFAULT_K})")
    p.add_argument("--keywords", default=DEFAULT_KEYWORDS, help=f"default: {DEFAULT_KEYWORDS}")
    p.add_argument("--format", default=DEFAULT_FORMAT, help=f"default: {DEFAULT_FORMAT}")
    p.add_argument("--placement", default="end", choices=["end", "interleaved"], help="default: end")
    p.add_argument("--order", default="shuffled", choices=["shuffled", "file"],
                   help="probe order (default: shuffled, seeded)")
    p.add_argument("--workers", type=int, default=None, help="processes for the LLM-free grids")
    p.add_argument("--no-cache", action="store_true", help="do not use the response cache")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def dataset_specs(text: str, locomo: list[str]) -> list[str]:
    """Expand ``synthetic``; check every name (unknown -> error listing presets)."""
    from copage.eval.datasets import preset_names

    presets = preset_names()
    specs: list[str] = []
    for name in _list(text) + list(locomo):
        if name == "synthetic":
            specs += [s for s in SYNTHETIC if s in presets]
        elif name in presets or Path(name).exists():
            specs.append(name)
        else:
            valid = ", ".join(["synthetic", *presets])
            raise ValueError(f"unknown dataset {name!r}: not a file and not a preset "
                             f"(valid presets: {valid})")
    if not specs:
        raise ValueError("no dataset given")
    return list(dict.fromkeys(specs))


def parse_units(text: str) -> list[str]:
    """``--units``: a comma list of boundary names (``sessions`` = ``session``), each checked."""
    from copage.eval.methods import check_units

    units = [{"sessions": "session"}.get(u, u) for u in _list(text)]
    if not units:
        raise ValueError("--units: no units given (e.g. fixed_10,fixed_5)")
    return list(dict.fromkeys(check_units(u) for u in units))


def experiment_names(text: str | None, has_model: bool) -> list[str]:
    """The experiments to run, each checked against the registry."""
    from copage.eval.experiments.catalog import EXPERIMENTS
    from copage.eval.experiments.runall import default_names

    if not text:
        return default_names(has_model)
    return [EXPERIMENTS.check(n) for n in _list(text)]


def paging_settings(args: argparse.Namespace) -> Any:
    """``copage simulate``'s options as :class:`PagingSettings` (names checked)."""
    from copage.cli.simulate import cells_from_args
    from copage.eval.experiments.interface import PagingSettings

    ns = argparse.Namespace(**{**vars(args), "seed": args.seed})
    cells_from_args(ns)  # validates every name with the registries' friendly errors
    return PagingSettings(tuple(_list(args.boundary)), tuple(_list(args.policy)),
                          tuple(int(k) for k in _list(args.k)), tuple(_list(args.keywords)),
                          tuple(_list(args.format)), args.placement, args.order)


def make_model(spec: str, timeout: float) -> Any:
    """The model of ``spec``; ``timeout`` goes to network adapters (a scripted model takes none)."""
    from copage.llm import get_model, parse_spec

    if parse_spec(spec).provider == "scripted":
        return get_model(spec)
    return get_model(spec, timeout=timeout)


def build_context(args: argparse.Namespace) -> Any:
    """Datasets, models and settings of the run (everything checked before anything runs)."""
    from copage.eval.experiments.common import (
        filter_categories,
        load_bench_dataset,
        parse_categories,
    )
    from copage.eval.experiments.interface import BenchContext
    from copage.eval.progress import Progress

    paging = paging_settings(args)
    names = experiment_names(args.experiment, args.model is not None)
    specs = dataset_specs(args.dataset, args.locomo)
    if args.probes is not None and args.probes < 1:
        raise ValueError(f"--probes must be >= 1, got {args.probes}")
    if args.timeout <= 0:
        raise ValueError(f"--timeout must be positive, got {args.timeout}")
    model = judges = None
    if args.model:
        model = make_model(args.model, args.timeout)
    no_judge = args.judges is not None and args.judges.strip().lower() == "none"
    if args.judges and not no_judge:
        judges = {s: make_model(s, args.timeout) for s in _list(args.judges)}
    out = Path(args.out) if args.out else Path("runs") / datetime.now().strftime("%Y%m%d-%H%M%S")
    categories = parse_categories(args.categories) if args.categories is not None else None
    datasets = [filter_categories(load_bench_dataset(s, seed=args.seed), categories)
                for s in specs]
    options: dict[str, Any] = {"cache": not args.no_cache, "no_judge": no_judge}
    if categories is not None:
        options["categories"] = list(categories)
    if args.prompt_style != "paper":  # the default stays out of the fingerprint of older runs
        options["prompt_style"] = args.prompt_style
    if args.budget is not None:
        if args.budget < 1:
            raise ValueError(f"--budget must be >= 1 token, got {args.budget}")
        options["budget"] = args.budget
    for name, flag in (("window", "--window"), ("top_k", "--top-k")):
        value = getattr(args, name)
        if value is not None:
            if value < 1:
                raise ValueError(f"{flag} must be >= 1, got {value}")
            options[name] = value
    if args.units is not None:
        options["units"] = parse_units(args.units)
    if args.workers is not None:
        options["workers"] = args.workers
    if args.concurrency is not None:
        if args.concurrency < 1:
            raise ValueError(f"--concurrency must be >= 1, got {args.concurrency}")
        options["concurrency"] = args.concurrency
    ctx = BenchContext(
        datasets=datasets, out=out, seed=args.seed, model=model, model_spec=args.model,
        judges=judges or {}, probes=args.probes,
        methods=_list(args.methods) if args.methods else None, paging=paging,
        progress=Progress(enabled=not args.quiet), options=options,
    )
    return ctx, names


def run(args: argparse.Namespace) -> int:
    """Run the experiments and write the report; prints where it is."""
    from copage.eval.experiments.runall import finished, run_experiments, settings_of
    from copage.eval.report import write_report
    from copage.llm import ModelError

    ctx, names = build_context(args)
    ctx.out.mkdir(parents=True, exist_ok=True)

    def log(msg: str) -> None:
        if not args.quiet:
            print(f"[bench] {msg}", file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    channel = meaning_channel()
    log(f"run directory {ctx.out}; datasets "
        + ", ".join(f"{d.name} ({len(d.conversations)} conversations, {d.probes} probes)"
                    for d in ctx.datasets) + f"; experiments {', '.join(names)}; "
        + f"copage's default meaning channel {channel}")
    try:
        results = run_experiments(ctx, names, log=log)
    except ModelError as e:
        print(f"copage bench: model error: {e}\n(every probe answered so far is kept in "
              f"{ctx.out}; run the same command again to resume)", file=sys.stderr)
        return 1
    results += finished(ctx, exclude=names)  # earlier runs into the same --out
    intro = [(f"datasets: {', '.join(d.name for d in ctx.datasets)}; model: "
              f"{ctx.model_spec or 'none (LLM-free)'}; seed {ctx.seed}; probes cap {ctx.probes or 'none'}"
              + (f"; LoCoMo categories {', '.join(map(str, ctx.options['categories']))} only"
                 if ctx.options.get("categories") else "")
              + f"; prompt style {ctx.options.get('prompt_style', 'paper')}"),
             (f"experiments: {', '.join(names)}; total {time.perf_counter() - t0:.1f} s; "
              f"copage's default meaning channel (the `bookmark_recall+copage` methods): "
              f"{channel}")]
    paths = write_report(ctx.out, results, settings_of(ctx), intro)
    print(f"report: {paths['html']}\nsummary: {paths['summary']}")
    return 0


def meaning_channel() -> str:
    """Whether copage's default meaning channel is on in this process, for the report
    (the ``bookmark_recall+copage`` methods follow it; docs/dense.md)."""
    from copage.dense import ModelMissing
    from copage.dense.default_channel import default_ranker, weights_of

    try:
        ranker = default_ranker()
    except ModelMissing as e:
        return f"required but missing ({str(e).splitlines()[0]})"
    return (f"{weights_of(ranker)}; COPAGE_DENSE=off for BM25 alone" if ranker is not None
            else "off (COPAGE_DENSE=off, or no model: `copage dense fetch`)")
