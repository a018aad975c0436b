"""Loading the BPE encodings that :mod:`copage.core.tokens` counts with (the edge).

The core reads no files; this module finds the Rust extension of ``bpe-openai``
on disk and loads it, and ``import copage`` hands :func:`load_bpe` to the core
(:func:`copage.core.tokens.set_encoding_loader`).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path
from typing import Any

__all__ = ["load_bpe"]


def _load_bindings() -> Any:
    """The Rust extension of ``bpe-openai``, loaded without the package's ``__init__``
    (which eagerly decodes three vocabularies: seconds at import time)."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("bpe-openai is not installed")
    for folder in spec.submodule_search_locations:
        for path in Path(folder).glob("_bindings*.so"):
            loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", str(path))
            mspec = importlib.util.spec_from_file_location("bpe_openai._bindings", path, loader=loader)
            if mspec is None:
                continue
            module = importlib.util.module_from_spec(mspec)
            loader.exec_module(module)
            return module
    import bpe_openai._bindings as bindings  # other platforms: the ordinary import

    return bindings


def load_bpe(encoding: str) -> Any:
    """The ``bpe-openai`` encoding ``encoding`` (``o200k_base``, ``cl100k_base``).

    Raises:
        ImportError: ``bpe-openai`` is not installed.
        ValueError: unknown encoding name.
    """
    return _load_bindings().tokenizer_for_encoding(encoding)
