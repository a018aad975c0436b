"""An opt-in sentence encoder: all-MiniLM-L6-v2 in numpy, for passages asked in other words.

Nothing here needs torch or Hugging Face's ``tokenizers``; the weights (90 MB) are not
shipped with copage but fetched once by ``copage dense fetch`` (see docs/dense.md).
"""

from __future__ import annotations

import os
import threading

from copage.dense.embedding_cache import EmbeddingCache
from copage.dense.minilm import MiniLM
from copage.dense.model_files import (
    MODEL_NAME,
    FetchError,
    ModelDamaged,
    ModelMissing,
    fetch_model,
    find_model,
)
from copage.dense.wordpiece import WordPiece

__all__ = ["MODEL_NAME", "EmbeddingCache", "FetchError", "MiniLM", "ModelDamaged",
           "ModelMissing", "WordPiece", "fetch_model", "find_model", "load_encoder"]

_loaded: dict[str, MiniLM] = {}
_load_lock = threading.Lock()


def load_encoder(path: str | os.PathLike[str] | None = None) -> MiniLM:
    """The encoder of the model folder :func:`find_model` picks for ``path``, loaded once
    per process and folder (the weights take 90 MB).

    Raises:
        ModelMissing: no model folder (the message says to run ``copage dense fetch``).
    """
    folder = str(find_model(path))
    with _load_lock:
        enc = _loaded.get(folder)
        if enc is None:
            enc = _loaded[folder] = MiniLM(folder)
        return enc
