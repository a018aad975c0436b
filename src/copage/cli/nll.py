"""``copage nll``: the NLL fault-detection experiment against one model."""

from __future__ import annotations

import argparse
import sys

DEFAULT_OUT = "nll-results"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "nll", help="NLL fault detection: full vs gist-compressed context (paper section 3)",
        description="Answer the 5 built-in conversations with full and gist-compressed context "
        "(temperature 0, logprobs on) and compare per-token NLL and rolling windows. Needs a "
        "model that returns logprobs. See docs/nll.md.",
    )
    p.add_argument("--model", required=True,
                   help="model spec, e.g. openai:gpt-4o-mini or openai:local@http://127.0.0.1:8080/v1")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"output directory (default: {DEFAULT_OUT})")
    p.add_argument("--window", type=int, default=32, help="rolling window in tokens (default: 32)")
    p.add_argument("--max-tokens", type=int, default=256,
                   help="reply length limit per call (default: 256)")
    p.add_argument("--concurrency", type=int, default=1,
                   help="requests in flight (default: 1, right for a local server)")
    p.add_argument("--timeout", type=float, default=300.0,
                   help="seconds per request before retrying (default: 300)")
    p.add_argument("--no-cache", action="store_true", help="do not use the response cache")
    p.add_argument("--no-plot", action="store_true", help="skip the PNG plot")


def run(args: argparse.Namespace) -> int:
    from copage.eval.nll import run_nll
    from copage.llm import ModelError, get_model, parse_spec

    if args.timeout <= 0:
        raise ValueError(f"--timeout must be positive, got {args.timeout}")
    options = {} if parse_spec(args.model).provider == "scripted" else {"timeout": args.timeout}
    model = get_model(args.model, cache=not args.no_cache, **options)
    try:
        result = run_nll(model, args.out, args.window, max_tokens=args.max_tokens,
                         plot=not args.no_plot, concurrency=args.concurrency)
    except ModelError as e:
        print(f"copage nll: model error: {e}", file=sys.stderr)
        return 1
    print(result.files["markdown"].read_text(encoding="utf-8"))
    print("files: " + ", ".join(str(p) for p in result.files.values()))
    print(f"produced by model {result.model}")
    return 0
