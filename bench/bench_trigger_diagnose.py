"""Why the speculative fill misses a probe's evidence: counts per cause, at one budget.

For ``bookmark_recall+copage`` (library defaults, ``speculative``) on synthetic presets
or LoCoMo files, every probe is put in one class:

* ``visible``: its evidence (with the acknowledgement turn, on synthetic data) is in
  the resident or open pages: no fill needed;
* ``filled``: the fill shows every evicted page holding its evidence;
* ``no shared word``: the page holding an evidence turn shares no content word with
  the question (a paraphrase: no threshold can find it);
* ``below threshold``: the best page's score is below the message's threshold
  (``Speculator.threshold_for``); split by the rank of the evidence page and by the
  best score;
* ``not picked``: the fill came on but the evidence page did not fit its allowance
  (or an acknowledgement's page was left out).

Run::

    PYTHONPATH=src python bench/bench_trigger_diagnose.py controlled ablation --seeds 0,1,2,3,4
"""

from __future__ import annotations

import argparse
import collections
from pathlib import Path

from copage.core.types import page_index
from copage.eval.experiments.common import load_bench_dataset, settings_for
from copage.eval.experiments.interface import BenchContext, PagingSettings
from copage.eval.experiments.methods_table import is_synthetic
from copage.eval.methods import BookmarkMethod, Variant, evidence_groups


def diagnose(spec: str, seed: int, budget: int, counts: collections.Counter[str]) -> None:
    ds = load_bench_dataset(spec, seed=seed)
    ctx = BenchContext(datasets=[ds], out=Path("."), seed=0, model=None, model_spec=None,
                       judges={}, probes=None, methods=None, paging=PagingSettings(),
                       progress=None, options={"budget": budget})  # type: ignore[arg-type]
    settings = settings_for(ds, ctx)
    method = BookmarkMethod("speculative", "speculative", Variant.of_mode("speculative", copage=True))
    for conv in ds.conversations:
        prep = method.prepare(conv, settings)
        visible = prep.state().visible
        for probe in conv.probes:
            if not probe.evidence:
                continue
            counts["probes"] += 1
            groups = evidence_groups(conv, probe, acknowledgements=is_synthetic(ds))
            need = set().union(*groups) - set(visible)
            if not need:
                counts["visible"] += 1
                continue
            pages = {prep.page_of[t] for t in need}
            facts = {prep.page_of[t] for t in probe.evidence if t in need}
            ranked = prep.speculator.ranked(prep.pager, probe.question)
            rank = {page_index(p): i for i, (p, _) in enumerate(ranked)}
            best = ranked[0][1] if ranked else 0.0
            got = {page_index(p) for p in prep.speculation(probe.question).paged_in}
            if pages <= got:
                counts["filled"] += 1
            elif any(p not in rank for p in facts):
                counts["no shared word"] += 1
            elif best < prep.speculator.threshold_for(probe.question):
                counts["below threshold"] += 1
                worst = max(rank[p] for p in facts)
                counts["  evidence page ranked " + ("first" if worst == 0 else
                                                   "2nd-5th" if worst < 5 else "6th or lower")] += 1
                counts["  best score " + ("< 0.1" if best < 0.1 else "0.1-0.2" if best < 0.2
                                          else "0.2 or more")] += 1
            else:
                counts["not picked"] += 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("datasets", nargs="+", help="synthetic presets or LoCoMo files")
    ap.add_argument("--seeds", default="0", help="seeds of the synthetic presets")
    ap.add_argument("--budget", type=int, default=2048)
    args = ap.parse_args()
    for spec in args.datasets:
        counts: collections.Counter[str] = collections.Counter()
        for seed in [int(s) for s in args.seeds.split(",")] if not Path(spec).exists() else [0]:
            diagnose(spec, seed, args.budget, counts)
        order = ["probes", "visible", "filled", "no shared word", "below threshold",
                 *sorted(k for k in counts if k.startswith("  ")), "not picked"]
        print(f"{Path(spec).stem}: " + ", ".join(f"{k.strip()} {counts[k]}" for k in order))


if __name__ == "__main__":
    main()
