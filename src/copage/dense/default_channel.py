"""copage's default meaning channel: on when the model's files are in place, else off.

all-MiniLM-L6-v2 ships inside copage with int8 weights (``copage/dense/bundled``), so
every fill (the library, the proxy, the adapters) ranks questions by meaning too from
``pip install copage`` on, unless told otherwise; ``copage dense fetch`` puts the
full-precision files in copage's cache folder, and they are preferred from then on.
Nothing is downloaded here: without any files (a packager who strips the bundled copy)
the fill is BM25 only, and a log line says how to turn the channel on.

``COPAGE_DENSE`` decides (read when the default is resolved):

* unset or empty: the default above (with ``COPAGE_DENSE_MODEL`` set, that folder is
  asked for: wrong or damaged files there are an error, as everywhere);
* ``off`` (or ``0``, ``false``, ``no``, ``none``): never;
* ``auto`` (or ``on``, ``1``, ``true``, ``yes``): required, from where
  :func:`~copage.dense.find_model` looks (an error when it is not there);
* a folder: required, from that folder.

The encoder is loaded at the first question that needs it (:class:`LazyEncoder`), so a
conversation that is never paged never loads the 90 MB of weights. In the library a
question waits until its conversation's turns are embedded (as a vector store embeds at
``add``: about 12 s for 1,900 turns imported at once, then a few milliseconds a turn),
unless ``COPAGE_DENSE_WAIT`` (seconds) bounds that wait: then a long history is embedded
in a background thread and the fill runs on BM25 alone until it is done
(``DenseRanker``'s ``wait``). The proxy always bounds it (:data:`WAIT_SECONDS` unless
``COPAGE_DENSE_WAIT`` says otherwise; :mod:`copage.server.dense_warm`).
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from copage.core.dense_rank import DEFAULT_SLOTS, DenseRanker, TextVectors, check_wait
from copage.dense.model_files import ENV_VAR as MODEL_ENV
from copage.dense.model_files import ModelDamaged, ModelMissing, describe, find_model

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DEFAULT", "ENV_SWITCH", "OFF_WORDS", "ON_WORDS", "WAIT_SECONDS", "WAIT_VAR",
           "LazyEncoder", "default_ranker", "dense_setting", "resolve", "wait_seconds",
           "weights_of"]

DEFAULT = "default"
"""The ``dense=`` value that stands for copage's default channel (``FillSettings``'s)."""

ENV_SWITCH = "COPAGE_DENSE"
OFF_WORDS = frozenset({"off", "0", "false", "no", "none"})
ON_WORDS = frozenset({"auto", "on", "1", "true", "yes"})

WAIT_SECONDS = 10.0
"""How long a proxy request waits for its conversation's turns to be embedded, unless
``COPAGE_DENSE_WAIT`` (seconds) says otherwise."""

WAIT_VAR = "COPAGE_DENSE_WAIT"

log = logging.getLogger("copage.dense")

_memo: dict[tuple[str, ...], DenseRanker | None] = {}
_memo_lock = threading.Lock()


class LazyEncoder:
    """The encoder of the model folder ``model``, made at its first use (so the weights,
    and with ``cache=True`` the embedding cache file, are opened by the first question
    that ranks by meaning, not when the channel is set up)."""

    def __init__(self, model: Path, *, cache: bool = False) -> None:
        self.model = model
        self.cache = cache
        self._encoder: TextVectors | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the encoder has been made."""
        return self._encoder is not None

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            if self._encoder is None:
                from copage.dense import ranker

                self._encoder = ranker(self.model, cache=self.cache or None).encoder
        return self._encoder.vectors(texts)


def wait_seconds(env: Mapping[str, str] | None = None) -> float:
    """``COPAGE_DENSE_WAIT`` when set (seconds, >= 0), else :data:`WAIT_SECONDS`.

    Raises:
        ValueError: not a number of seconds >= 0.
    """
    raw = (os.environ if env is None else env).get(WAIT_VAR, "").strip()
    if not raw:
        return WAIT_SECONDS
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"COPAGE_DENSE_WAIT must be a number of seconds >= 0, got {raw!r}")
    return value


def dense_setting(env: Mapping[str, str] | None = None) -> str | None:
    """``COPAGE_DENSE`` read: None (unset: the default), ``off``, ``auto`` or a folder."""
    raw = (os.environ if env is None else env).get(ENV_SWITCH, "").strip()
    if not raw:
        return None
    return "off" if raw.lower() in OFF_WORDS else "auto" if raw.lower() in ON_WORDS else raw


def default_ranker(setting: str | None = None, *, cache: bool = False,
                   env: Mapping[str, str] | None = None, wait: bool | float | None = None
                   ) -> DenseRanker | None:
    """The meaning channel copage uses when none is given (module docstring).

    Args:
        setting: None to read ``COPAGE_DENSE`` (:func:`dense_setting`); else its value.
        cache: keep the turns' vectors in copage.dense's cache file (the proxies do);
            False: in memory only.
        env: the environment to read (default ``os.environ``).
        wait: the ranker's ``wait`` (None: the seconds of ``COPAGE_DENSE_WAIT`` when it
            is set, else True: a question waits until its turns are embedded).

    Returns:
        One shared :class:`DenseRanker` per model folder, ``cache`` and ``wait`` (the
        encoder loaded at its first use), or None: off, or (by default) no model files.

    Raises:
        ModelMissing, ModelDamaged: the channel was asked for (``auto`` or a folder) and
            the files are not there, or not the expected ones.
        ValueError: ``COPAGE_DENSE_WAIT`` or ``wait`` is not a number of seconds >= 0.
    """
    if setting is not None:
        setting = setting.strip() or None
    if setting is None:
        setting = dense_setting(env)
    elif setting.lower() in OFF_WORDS:
        setting = "off"
    if setting is not None and setting.lower() in ON_WORDS:
        setting = "auto"
    if setting == "off":
        return None
    # a model folder named in $COPAGE_DENSE_MODEL is asked for too: wrong is an error
    required = setting is not None or bool(os.environ.get(MODEL_ENV, "").strip())
    try:
        folder = find_model(None if setting in (None, "auto") else setting)
    except ModelDamaged as e:  # (a ModelMissing too: caught first)
        if required:
            raise
        warnings.warn(f"copage: the fill's meaning channel is off: {e}", RuntimeWarning,
                      stacklevel=2)
        return None
    except ModelMissing:
        if required:
            raise
        _once(("missing",), "copage: the fill's meaning channel is off: its model files "
              "are not installed (run `copage dense fetch` once to turn it on; docs/dense.md)")
        return None
    if wait is None:
        bounded = (os.environ if env is None else env).get(WAIT_VAR, "").strip()
        wait = wait_seconds(env) if bounded else True
    how = check_wait(wait)
    key = (str(folder), str(cache), repr(how))
    with _memo_lock:
        found = _memo.get(key)
        if found is None:
            found = _memo[key] = DenseRanker(LazyEncoder(folder, cache=cache), DEFAULT_SLOTS,
                                             wait=how)
        return found


def weights_of(ranker: DenseRanker | None) -> str:
    """What a startup line or a report says of a channel: ``"off"``, ``"on
    (all-MiniLM-L6-v2, int8, bundled with copage)"``, ``"on (all-MiniLM-L6-v2, full
    precision)"``, or ``"on"`` for an encoder of the caller's own."""
    if ranker is None:
        return "off"
    enc = ranker.encoder
    return f"on ({describe(enc.model)})" if isinstance(enc, LazyEncoder) else "on"


def resolve(dense: DenseRanker | str | None) -> DenseRanker | None:
    """The ranker a ``dense=`` value stands for (``FillSettings.dense``,
    ``PagedMemory.search``, the adapters): a ranker itself, None (BM25 only), or a
    string for :func:`default_ranker` (:data:`DEFAULT`: copage's default).

    Raises:
        TypeError: not a ranker, a string or None.
        ModelMissing, ModelDamaged: a required model (``"auto"``, a folder) is not there.
    """
    if dense is None or isinstance(dense, DenseRanker):
        return dense
    if not isinstance(dense, str):
        raise TypeError(f"dense must be a DenseRanker, a string ('default', 'off', 'auto' "
                        f"or a model folder) or None, got {type(dense).__name__}")
    return default_ranker(None if dense == DEFAULT else dense)


_said: set[tuple[str, ...]] = set()


def _once(key: tuple[str, ...], message: str) -> None:
    with _memo_lock:
        if key in _said:
            return
        _said.add(key)
    log.info(message)
