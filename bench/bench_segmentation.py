"""Segmentation benchmark: pages, mean page length, Pk and WindowDiff.

Usage:
    .venv/bin/python bench/bench_segmentation.py [--locomo PATH]

Part 1 scores fixed_20, topic_shift and segment against the hand-labelled topic
boundaries of tests/fixtures/segmentation/chats.json (scores are micro-averaged:
per-conversation Pk/WindowDiff weighted by windows). Part 2 cuts the LoCoMo sample
(if the file exists) and scores strategies that do not see sessions against the
true session breaks. Offline split (whole conversation at once) and online
(turn by turn, as the pager) are both shown.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from copage.core.boundaries import get_boundary, pk, split, split_online, window_diff
from copage.core.boundaries.segmentation_errors import default_k
from copage.core.types import Turn

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests/fixtures/segmentation/chats.json"
LOCOMO = Path("/work/shared/data/locomo/locomo-sample.json")


def fixture_convs() -> list[tuple[list[Turn], list[int]]]:
    """(turns, gold cuts) for each labelled chat."""
    doc = json.loads(FIXTURE.read_text())
    out = []
    for c in doc["conversations"]:
        turns = [
            Turn(id=f"{c['id']}:{i}", role=t["role"], text=t["text"])
            for i, t in enumerate(c["turns"])
        ]
        out.append((turns, [*c["boundaries"], len(turns)]))
    return out


def locomo_convs(path: Path) -> list[tuple[list[Turn], list[int]]]:
    """(turns with session numbers, session-break cuts) for each LoCoMo sample."""
    out = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        nums = sorted(int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k)))
        turns: list[Turn] = []
        cuts: list[int] = []
        for s in nums:
            for t in conv[f"session_{s}"]:
                meta = {"blip_caption": t["blip_caption"]} if t.get("blip_caption") else {}
                turns.append(
                    Turn(
                        id=t["dia_id"],
                        role="user",
                        text=t["text"],
                        speaker=t["speaker"],
                        session=s,
                        timestamp=conv.get(f"session_{s}_date_time"),
                        meta=meta,
                    )
                )
            cuts.append(len(turns))
        out.append((turns, cuts))
    return out


def hide_sessions(turns: list[Turn]) -> list[Turn]:
    """The same turns with session numbers removed."""
    return [Turn(id=t.id, role=t.role, text=t.text, speaker=t.speaker) for t in turns]


def score(
    convs: list[tuple[list[Turn], list[int]]], name: str, mode: str, **options: object
) -> str:
    """One table row: pooled pages, mean page length, Pk, WindowDiff."""
    do = split if mode == "offline" else split_online
    pages = errs_pk = errs_wd = windows = turns_total = singles = 0
    for turns, gold in convs:
        strat = get_boundary(name, **options)
        cut_pages = do(turns, strat)
        hyp, pos = [], 0
        for p in cut_pages:
            pos += len(p)
            hyp.append(pos)
        n, k = len(turns), default_k(gold, len(turns))
        errs_pk += round(pk(gold, hyp, n, k) * (n - k))
        errs_wd += round(window_diff(gold, hyp, n, k) * (n - k))
        windows += n - k
        pages += len(cut_pages)
        singles += sum(1 for p in cut_pages if len(p) == 1)
        turns_total += n
    label = name + "".join(f" {k}={v}" for k, v in options.items())
    return (
        f"| {label} | {mode} | {pages} | {turns_total / pages:.1f} | {singles} | "
        f"{errs_pk / windows:.3f} | {errs_wd / windows:.3f} |"
    )


HEAD = ("| strategy | mode | pages | mean turns/page | 1-turn pages | Pk | WindowDiff |\n"
        "|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> int:
    """Print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--locomo", type=Path, default=LOCOMO)
    args = ap.parse_args(argv)
    fx = fixture_convs()
    gold_segments = sum(len(g) for _, g in fx)
    print(
        f"## Labelled chats ({len(fx)} conversations, {sum(len(t) for t, _ in fx)} turns, "
        f"{gold_segments} gold topic segments)\n"
    )
    print(HEAD)
    for mode in ("offline", "online"):
        for name in ("fixed_20", "topic_shift", "segment"):
            print(score(fx, name, mode))
        print(score(fx, "topic_shift", mode, min_page=1))  # the lookbehind fix alone
    if not args.locomo.exists():
        print(f"\n(LoCoMo sample not found at {args.locomo}; skipped)")
        return 0
    lc = locomo_convs(args.locomo)
    hidden = [(hide_sessions(t), g) for t, g in lc]
    print(
        f"\n## LoCoMo sample ({len(lc)} conversations, {sum(len(t) for t, _ in lc)} turns, "
        f"{sum(len(g) for _, g in lc)} sessions); gold = session breaks\n"
    )
    print(HEAD)
    for mode in ("offline", "online"):
        print(score(hidden, "fixed_20", mode))
        print(score(hidden, "topic_shift", mode))
        print(score(hidden, "topic_shift", mode, min_page=1))
        print(score(hidden, "segment", mode, use_sessions=False))
        print(score(lc, "segment", mode, use_sessions=True))
        print(score(lc, "session", mode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
