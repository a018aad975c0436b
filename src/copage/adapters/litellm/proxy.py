"""The hook LiteLLM's ``config.yaml`` names: ``callbacks: copage.adapters.litellm.proxy.hook``.

Configured from the environment (LiteLLM's ``environment_variables:`` section sets
these before it loads callbacks):

* ``COPAGE_STORE``: the store URL (default ``sqlite://copage.db``);
* ``COPAGE_RECALL_MODE``: ``speculative`` (default) or ``none``;
* ``COPAGE_TENANT``: the tenant of the conversations (default ``default``);
* ``COPAGE_RESIDENT_PAGES``, ``COPAGE_BOUNDARY``: paging settings of new conversations
  (default: copage's);
* ``COPAGE_SPECULATIVE_TOKENS``: the fill's allowance (default 1024);
* ``COPAGE_DENSE``: the fill's meaning channel (docs/dense.md): unset (default) off,
  ``auto`` the model folder :func:`copage.dense.find_model` finds, else a model folder;
  the folder is checked when the hook is made (``ModelMissing`` says to run
  ``copage dense fetch``), the encoder loaded at the first request that needs it;
* ``COPAGE_USE_USER``: ``0`` stops the ``user`` field naming the conversation;
* ``COPAGE_OTEL``: ``1`` exports OpenTelemetry traces over OTLP (also when the
  standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set and no tracer provider is).

Nothing is opened at import: the store is opened at the first request, and
:mod:`copage.dense` is not even imported unless ``COPAGE_DENSE`` is set.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from copage.adapters.litellm.hook import CopageHook
from copage.core.dense_rank import DenseRanker, TextVectors
from copage.session import trace
from copage.session.speculate import DEFAULT_TOKENS

if TYPE_CHECKING:
    import numpy as np

__all__ = ["LazyEncoder", "dense_from_env", "from_env", "hook"]


def _int(env: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


class LazyEncoder:
    """The encoder of ``copage.dense.ranker(model, cache=True)``, made at its first use
    (so the weights and the embedding cache file are opened by the first request that
    ranks by meaning, not when LiteLLM loads the hook)."""

    def __init__(self, model: Path) -> None:
        self.model = model
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

                self._encoder = ranker(self.model, cache=True).encoder
        return self._encoder.vectors(texts)


def dense_from_env(env: Mapping[str, str]) -> DenseRanker | None:
    """The fill's meaning channel ``COPAGE_DENSE`` asks for (module docstring), None when
    it is unset.

    Raises:
        ModelMissing: no model folder there (the message says to run ``copage dense fetch``).
    """
    setting = env.get("COPAGE_DENSE", "").strip()
    if not setting:
        return None
    from copage.dense import find_model

    return DenseRanker(LazyEncoder(find_model(None if setting == "auto" else setting)))


def from_env(environ: Mapping[str, str] | None = None) -> CopageHook:
    """A :class:`CopageHook` configured by the ``COPAGE_*`` variables (module docstring)."""
    env = os.environ if environ is None else environ
    settings: dict[str, Any] = {}
    resident = _int(env, "COPAGE_RESIDENT_PAGES", None)
    if resident is not None:
        settings["resident_pages"] = resident
    if env.get("COPAGE_BOUNDARY"):
        settings["boundary"] = env["COPAGE_BOUNDARY"]
    if env.get("COPAGE_OTEL", "") in ("1", "true"):
        if not trace.active():
            trace.setup()
    else:
        trace.setup_from_env(env)
    return CopageHook(env.get("COPAGE_STORE") or "sqlite://copage.db",
                      tenant=env.get("COPAGE_TENANT") or "default",
                      recall_mode=env.get("COPAGE_RECALL_MODE") or "speculative",
                      speculative_tokens=_int(env, "COPAGE_SPECULATIVE_TOKENS",
                                              DEFAULT_TOKENS) or 0,
                      dense=dense_from_env(env),
                      use_user=env.get("COPAGE_USE_USER", "1") not in ("0", "false"),
                      **settings)


hook = from_env()
"""The instance ``config.yaml`` names."""
