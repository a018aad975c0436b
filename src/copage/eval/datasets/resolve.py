"""Dataset specs: a built-in preset name or a path to a LoCoMo-format file."""

from __future__ import annotations

from pathlib import Path

from copage.eval.datasets.locomo import load_locomo, parse_locomo
from copage.eval.datasets.probes import Dataset, DatasetError


def preset_names() -> list[str]:
    """Names of the built-in (generated) datasets."""
    try:
        from copage.eval.synthetic import PRESETS
    except ImportError:  # the generator is optional for loading files
        return []
    return sorted(PRESETS)


def load_dataset(spec: str, *, seed: int = 0) -> Dataset:
    """Load a preset (generated with ``seed``) or a LoCoMo-format file."""
    if spec in preset_names():
        from copage.eval.synthetic import generate_preset

        return parse_locomo(generate_preset(spec, seed=seed), source=f"preset:{spec}", name=spec)
    path = Path(spec)
    if path.exists():
        return load_locomo(path)
    raise DatasetError(
        f"no dataset {spec!r}: not a file, and not a built-in preset "
        f"(presets: {', '.join(preset_names())})"
    )
