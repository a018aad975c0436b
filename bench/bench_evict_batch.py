"""Hit rate, routing and prompt tokens of the simulation by eviction batch size.

The LoCoMo conversations of the given files under ``copage simulate``'s
definitions (fixed_10 + LRU, k = 5, ``contrast``, flat index, probe order
shuffled, seed 0), placement ``end`` and ``interleaved``, with
``evict_batch`` 1 (the paper's), 2 and 3. The prompt-cache side of the same
setting is ``bench_prompt_cache.py --evict-batch``.

Run::

    .venv/bin/python bench/bench_evict_batch.py ../shared/data/locomo/locomo-sample.json \\
        ../shared/data/locomo/locomo-more.json
"""

from __future__ import annotations

import argparse

from copage.eval.datasets import load_dataset
from copage.eval.simulation import Cell, run_conversation


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--batches", default="1,2,3")
    args = ap.parse_args()
    convs = [c for f in args.files for c in load_dataset(f, seed=0).conversations]
    print(f"{len(convs)} conversations; fixed_10 + lru, k=5, contrast, flat index")
    print(f"{'batch':>5s} {'placement':11s} {'hit_rate':>8s} {'routing_top1':>12s} {'prompt_tokens':>13s}")
    for batch in (int(b) for b in args.batches.split(",")):
        for placement in ("end", "interleaved"):
            cell = Cell("fixed_10", "lru", 5, "contrast", placement=placement, evict_batch=batch)
            outs = [o for c in convs for o in run_conversation(c, cell).outcomes]
            routed = [o.routing for o in outs if o.routing is not None]
            print(f"{batch:5d} {placement:11s} {sum(o.hit for o in outs) / len(outs):8.3f} "
                  f"{sum(routed) / len(routed):12.3f} "
                  f"{sum(o.prompt_tokens for o in outs) / len(outs):13.0f}")


if __name__ == "__main__":
    main()
