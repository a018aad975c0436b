"""Entry points: generate samples from a config or a preset, and write them as JSON."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from copage.eval.synthetic.builder import build_sample
from copage.eval.synthetic.presets import SyntheticConfig, get_preset


def generate(config: SyntheticConfig, seed: int) -> list[dict[str, Any]]:
    """LoCoMo-format samples for ``config``; the same seed gives byte-identical JSON."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    types = list(config.fact_types)
    random.Random(f"copage-synthetic:{seed}:types").shuffle(types)
    samples: list[dict[str, Any]] = []
    for index in range(config.conversations):
        # One generator per conversation, seeded from (seed, index) only.
        rng = random.Random(f"copage-synthetic:{seed}:{index}")
        start = index * config.facts
        chosen = [types[(start + j) % len(types)] for j in range(config.facts)]
        samples.append(
            build_sample(
                config,
                rng,
                sample_id=f"synth-{config.name}-s{seed}-{index:02d}",
                types=chosen,
                topology=config.topology_for(index),
                n_probes=config.probes_for(index),
            )
        )
    return samples


def generate_preset(name: str, seed: int = 0) -> list[dict[str, Any]]:
    """Samples of the preset called ``name`` (see ``PRESETS``)."""
    return generate(get_preset(name), seed)


def write_json(samples: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write ``samples`` as a LoCoMo-format JSON file (UTF-8, indented); returns the path."""
    p = Path(path)
    text = json.dumps(list(samples), indent=2, ensure_ascii=False) + "\n"
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    except OSError as e:
        raise OSError(f"cannot write synthetic dataset to {p}: {e.strerror or e}") from None
    return p
