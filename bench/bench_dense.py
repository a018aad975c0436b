"""Speed and memory of copage's sentence encoder (``copage.dense``) on LoCoMo turns.

Loads the model folder :func:`copage.dense.find_model` picks (``--model``,
``$COPAGE_DENSE_MODEL``, the cache folder of ``copage dense fetch``), embeds the first
``--turns`` turns of the given LoCoMo files (the encoder's default batching) ``--repeat``
times, and prints turns per second (the best and the median run), the load time and
the process's peak resident memory before loading, after loading and after encoding.

Run::

    OPENBLAS_NUM_THREADS=2 PYTHONPATH=src python bench/bench_dense.py \\
        ../shared/data/locomo/locomo-sample.json --turns 256
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from pathlib import Path

from copage.dense import load_encoder


def peak_mb() -> int:
    """Peak resident memory of this process so far, in MB (Linux reports KB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def turns_of(files: list[Path], n: int) -> list[str]:
    out: list[str] = []
    for f in files:
        for conv in json.loads(f.read_text(encoding="utf-8")):
            for key, session in conv["conversation"].items():
                if key.startswith("session_") and isinstance(session, list):
                    out += [str(t["text"]) for t in session]
    return out[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", type=Path, help="LoCoMo JSON files")
    ap.add_argument("--turns", type=int, default=256)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--model", default=None, help="model folder (default: find_model's)")
    args = ap.parse_args()
    turns = turns_of(args.files, args.turns)
    before = peak_mb()
    t0 = time.perf_counter()
    enc = load_encoder(args.model)
    load, loaded = time.perf_counter() - t0, peak_mb()
    rates = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        enc.encode(turns)
        rates.append(len(turns) / (time.perf_counter() - t0))
    print(f"{len(turns)} turns, {args.repeat} runs: best {max(rates):.1f} turns/s, "
          f"median {statistics.median(rates):.1f} turns/s; load {load:.2f} s "
          f"(sha256 check included); peak RSS {before} MB before loading, {loaded} MB "
          f"loaded, {peak_mb()} MB after encoding")


if __name__ == "__main__":
    main()
