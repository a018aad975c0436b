"""The sentence encoder of the fill's meaning channel: all-MiniLM-L6-v2 in numpy, for
passages asked in other words.

Nothing here needs torch or Hugging Face's ``tokenizers``. The weights ship inside
copage in int8 (23 MB, ``bundled/``), so the channel is on by default; ``copage dense
fetch`` adds the full-precision ones (90 MB), preferred once there
(:mod:`copage.dense.default_channel`; docs/dense.md).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from copage.core.dense_rank import DEFAULT_SLOTS, DenseRanker
from copage.dense.embedding_cache import EmbeddingCache
from copage.dense.minilm import MiniLM
from copage.dense.model_files import (
    MODEL_NAME,
    FetchError,
    ModelDamaged,
    ModelMissing,
    bundled_dir,
    fetch_model,
    find_model,
)
from copage.dense.wordpiece import WordPiece

__all__ = ["MODEL_NAME", "EmbeddingCache", "FetchError", "MiniLM", "ModelDamaged",
           "ModelMissing", "WordPiece", "bundled_dir", "default_cache_file", "fetch_model",
           "find_model", "load_encoder", "ranker"]

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


def default_cache_file() -> Path:
    """``$XDG_CACHE_HOME/copage/embeddings.sqlite`` (``~/.cache`` by default): where
    :func:`ranker` keeps the turns' vectors with ``cache=True``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "copage" / "embeddings.sqlite"


def ranker(model: str | os.PathLike[str] | None = None, *,
           cache: bool | str | os.PathLike[str] | None = None, slots: int = DEFAULT_SLOTS
           ) -> DenseRanker:
    """The fill's meaning channel over all-MiniLM-L6-v2, for
    ``FillSettings(dense=ranker())`` (docs/dense.md).

    Args:
        model: the model folder (default: where :func:`find_model` finds it).
        cache: where the turns' vectors are kept across processes: ``True`` the
            :func:`default_cache_file`, a path that file, None/False memory only (a
            restarted process embeds a long chat's turns again).
        slots: fill places for the best passages by meaning.

    Raises:
        ModelMissing: no model folder (run ``copage dense fetch``).
    """
    path: Path | None = None
    if cache is True:
        path = default_cache_file()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError:
            pass  # the cache warns once and keeps the vectors in memory
    elif cache:
        path = Path(cache)
    return DenseRanker(EmbeddingCache(load_encoder(model), path), slots)
