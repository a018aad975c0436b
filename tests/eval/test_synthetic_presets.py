"""Synthetic presets, the distractor knob, topology and fact placement."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from copage.eval.synthetic import (
    PRESETS,
    SyntheticConfig,
    generate,
    generate_preset,
    get_preset,
    keyword_turns,
    revisit_rate,
)
from copage.eval.synthetic.measures import flat_turns


def test_controlled_preset_matches_the_paper() -> None:
    samples = generate_preset("controlled", seed=0)
    assert len(samples) == 10
    assert sum(len(s["qa"]) for s in samples) == 22
    assert all(20 <= len(flat_turns(s)) <= 35 for s in samples)
    assert {s["synthetic"]["topology"] for s in samples} == {"forward"}
    assert {q["fact_type"] for s in samples for q in s["qa"]} == set(
        PRESETS["controlled"].fact_types
    )
    assert samples[3]["sample_id"] == "synth-controlled-s0-03"


def test_ablation_presets_sizes() -> None:
    samples = generate_preset("ablation", seed=0)
    assert len(samples) == 20 and sum(len(s["qa"]) for s in samples) == 160
    assert all(116 <= len(flat_turns(s)) <= 124 for s in samples)
    topologies = [s["synthetic"]["topology"] for s in samples]
    assert topologies.count("forward") == topologies.count("revisit") == 10
    deep = generate_preset("ablation-deepseek", seed=0)
    assert len(deep) == 5 and sum(len(s["qa"]) for s in deep) * 20 == 780


def test_ablation_conversation_length() -> None:
    samples = generate(replace(get_preset("ablation"), conversations=2), seed=1)
    assert all(116 <= len(flat_turns(s)) <= 124 for s in samples)
    assert [len(s["qa"]) for s in samples] == [8, 8]
    assert samples[1]["sample_id"] == "synth-ablation-s1-01"


def test_unknown_preset_lists_valid_names() -> None:
    with pytest.raises(ValueError, match="controlled, ablation, ablation-deepseek"):
        get_preset("nope")
    assert get_preset("controlled", conversations=2, total_probes=4).conversations == 2
    with pytest.raises(ValueError, match="two probes per fact"):
        get_preset("controlled", conversations=2)  # 22 probes cannot fit in 2 x 3 facts


def _keyword_count(samples: list[dict[str, Any]]) -> int:
    return sum(keyword_turns(s, f["keyword"]) for s in samples for f in s["synthetic"]["facts"])


def test_distractors_add_turns_sharing_the_keyword() -> None:
    base = SyntheticConfig(conversations=6, turns=(60, 60), facts=5, probes=5)
    none = generate(base, seed=4)
    some = generate(replace(base, distractors=3), seed=4)
    # every distractor user turn carries its type's keyword
    for s in some:
        turns = {t["dia_id"]: t["text"] for t in flat_turns(s)}
        for f in s["synthetic"]["facts"]:
            assert len(f["distractor_turns"]) == 3
            for d in f["distractor_turns"]:
                assert f["keyword"] in turns[d].lower(), turns[d]
    assert _keyword_count(some) >= _keyword_count(none) + 6 * 5 * 3


def test_forward_and_revisit_topologies_differ() -> None:
    base = SyntheticConfig(conversations=8, turns=(80, 90), facts=5, probes=6, distractors=1)
    forward = generate(replace(base, topology="forward"), seed=5)
    revisit = generate(replace(base, topology="revisit"), seed=5)
    assert revisit_rate(forward) < 0.1
    assert revisit_rate(revisit) > 0.9
    multi = [len(q["evidence"]) > 1 for s in revisit for q in s["qa"]]
    assert all(multi)
    assert all(len(q["evidence"]) == 1 for s in forward for q in s["qa"])
    updated = [
        f for s in revisit for f in s["synthetic"]["facts"] if f["value"] != f["initial_value"]
    ]
    assert updated, "revisit topology should update some facts"
    resumed = sum("Back to " in t["text"] for s in revisit for t in flat_turns(s))
    assert resumed > 0
    assert sum("Back to " in t["text"] for s in forward for t in flat_turns(s)) == 0


def _first_evidence_share(samples: list[dict[str, Any]]) -> float:
    shares = []
    for s in samples:
        ids = [t["dia_id"] for t in flat_turns(s)]
        shares += [ids.index(q["evidence"][0]) / len(ids) for q in s["qa"]]
    return max(shares)


def test_early_placement_keeps_facts_in_the_first_part() -> None:
    base = SyntheticConfig(conversations=6, turns=(60, 70), facts=4, probes=4)
    early = generate(replace(base, placement="early", early_fraction=0.3), seed=2)
    spread = generate(base, seed=2)
    assert _first_evidence_share(early) <= 0.32
    assert _first_evidence_share(spread) > 0.5


def test_copage_locomo_loader_reads_the_output_unrepaired(tmp_path: Any) -> None:
    from copage.eval.datasets import load_locomo
    from copage.eval.synthetic import write_json

    path = write_json(generate_preset("controlled", seed=1), tmp_path / "synth.json")
    data = load_locomo(path)
    assert len(data.conversations) == 10
    assert sum(len(c.probes) for c in data.conversations) == 22
    assert not data.repairs and not data.probes_skipped
    probe = data.conversations[0].probes[0]
    assert probe.fact_type and probe.meta["probe_kind"] in ("direct", "indirect")
