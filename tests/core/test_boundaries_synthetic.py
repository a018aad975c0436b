"""segment vs fixed_20 on a held-out synthetic seed (ablation preset, seed 1000).

Seed 1000 was never used while writing or tuning the strategies. The requirement is
that ``segment`` does not fragment: at most 1.5x the pages of ``fixed_20``. Pk against
the generator's gold topic blocks is reported, not asserted: on this data ``segment``
does not beat ``fixed_20`` (see docs/segmentation.md, "Synthetic conversations,
held-out seeds").
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from copage.core.boundaries import get_boundary, pk, split, split_online
from copage.core.boundaries.segmentation_errors import default_k
from copage.core.types import Turn
from copage.eval.datasets.locomo import parse_locomo
from copage.eval.synthetic import generate_preset


@pytest.fixture(scope="module")
def convs() -> list[tuple[tuple[Turn, ...], list[int]]]:
    samples = generate_preset("ablation", 1000)
    data = parse_locomo(samples, name="ablation-1000")
    out = []
    for s, c in zip(samples, data.conversations, strict=True):
        n = len(c.turns)
        out.append((c.turns, [*[x for x in s["synthetic"]["segments"] if x > 0], n]))
    return out


def _run(
    convs: list[tuple[tuple[Turn, ...], list[int]]], name: str, mode: str
) -> tuple[int, float]:
    """Total pages and pooled Pk of strategy ``name`` in ``mode``."""
    do = split if mode == "offline" else split_online
    pages = windows = 0
    errors = 0.0
    for turns, gold in convs:
        cut = do(turns, get_boundary(name))
        hyp, pos = [], 0
        for p in cut:
            pos += len(p)
            hyp.append(pos)
        n = len(turns)
        k = default_k(gold, n)
        errors += pk(gold, hyp, n, k) * (n - k)
        windows += n - k
        pages += len(cut)
    return pages, errors / windows


@pytest.mark.parametrize("mode", ["offline", "online"])
def test_segment_pages_within_1_5x_of_fixed_20(
    convs: list[tuple[tuple[Turn, ...], list[int]]],
    mode: str,
    record_property: Callable[[str, object], None],
) -> None:
    fixed_pages, fixed_pk = _run(convs, "fixed_20", mode)
    seg_pages, seg_pk = _run(convs, "segment", mode)
    assert len(convs) == 20 and fixed_pages >= 20
    assert seg_pages <= 1.5 * fixed_pages, (seg_pages, fixed_pages)
    # Reported, not asserted (segment does not cut closer than fixed_20 here).
    record_property("pk_fixed_20", round(fixed_pk, 3))
    record_property("pk_segment", round(seg_pk, 3))
    print(
        f"\n{mode}: pages segment {seg_pages} / fixed_20 {fixed_pages} "
        f"= {seg_pages / fixed_pages:.2f}; Pk segment {seg_pk:.3f}, fixed_20 {fixed_pk:.3f}"
    )
    assert 0.0 <= seg_pk <= 1.0 and 0.0 <= fixed_pk <= 1.0


def test_segment_keeps_a_user_message_with_its_reply() -> None:
    """The exchange rule: no page starts with the reply to the previous page's last message."""
    from copage.core.boundaries import get_boundary, split
    from copage.eval.datasets import load_dataset

    ds = load_dataset("ablation", seed=2001)
    for conv in ds.conversations[:6]:
        pages = split(conv.turns, get_boundary("segment"))
        for prev, page in itertools.pairwise(pages):
            assert not (prev[-1].role == "user" and page[0].role == "assistant")
        loose = split(conv.turns, get_boundary("segment", exchanges=False))
        assert sum(len(p) for p in loose) == len(conv.turns)
