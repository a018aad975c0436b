"""``auto``'s threshold on the benchmark's data: development and held-out conversations.

Applies :func:`copage.eval.llmkeywords.calibrate.choose_threshold` to the heuristic
keyword mass (:func:`copage.eval.llmkeywords.mass.heuristic_mass`) of benchmark
conversations: development ``controlled`` preset (the paper: ``hybrid`` wins) and
LoCoMo conv-26 (``llm-batch`` wins); held out ``ablation`` and LoCoMo conv-30.
Run ``python -m copage.eval.calibrate_auto [--locomo PATH]`` for the table in
``docs/llm-bookmarks.md``. It lives here, not in ``copage.eval.llmkeywords``, because
it reads the benchmark's datasets: the library never imports ``copage.eval``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from copage.eval.datasets import load_dataset
from copage.eval.llmkeywords.calibrate import ConversationMass, choose_threshold, conversation_pages
from copage.eval.llmkeywords.mass import heuristic_mass

LOCOMO_SAMPLE = "/work/shared/data/locomo/locomo-sample.json"


def _masses(spec: str, only: set[str] | None, boundary: str, n: int) -> list[ConversationMass]:
    ds = load_dataset(spec, seed=0)
    out = []
    for conv in ds.conversations:
        if only and conv.id not in only:
            continue
        pages = conversation_pages(conv.turns, boundary)
        out.append(ConversationMass(ds.name, conv.id, len(pages), heuristic_mass(pages, n)))
    if only and len(out) != len(only):
        raise ValueError(f"{spec}: conversations {sorted(only)} not all found")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Print the masses, the chosen threshold and the held-out choices."""
    p = argparse.ArgumentParser(prog="python -m copage.eval.calibrate_auto")
    p.add_argument("--locomo", default=LOCOMO_SAMPLE)
    p.add_argument("--boundary", default="fixed_10")
    p.add_argument("-n", type=int, default=4, help="keywords per bookmark (default 4)")
    a = p.parse_args(argv)
    dev_high = _masses("controlled", None, a.boundary, a.n)
    dev_low = _masses(a.locomo, {"conv-26"}, a.boundary, a.n)
    threshold = choose_threshold([m.mass for m in dev_high], [m.mass for m in dev_low])
    held = [(m, "hybrid") for m in _masses("ablation", None, a.boundary, a.n)]
    held += [(m, "llm-batch") for m in _masses(a.locomo, {"conv-30"}, a.boundary, a.n)]
    print("| split | dataset | conversation | pages | mass | auto picks | paper's winner |")
    print("|---|---|---|---|---|---|---|")
    for m, want in [(m, "hybrid") for m in dev_high] + [(m, "llm-batch") for m in dev_low]:
        pick = "hybrid" if m.mass >= threshold else "llm-batch"
        print(f"| dev | {m.dataset} | {m.conversation} | {m.pages} | {m.mass:.3f} | {pick} | {want} |")
    right = 0
    for m, want in held:
        pick = "hybrid" if m.mass >= threshold else "llm-batch"
        right += pick == want
        print(f"| held-out | {m.dataset} | {m.conversation} | {m.pages} | {m.mass:.3f} "
              f"| {pick} | {want} |")
    print(f"\nthreshold (chosen on dev only) = {threshold:.3f}; held-out conversations where "
          f"auto picks the paper's winner: {right}/{len(held)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
