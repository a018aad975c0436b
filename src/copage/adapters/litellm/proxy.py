"""The hook LiteLLM's ``config.yaml`` names: ``callbacks: copage.adapters.litellm.proxy.hook``.

Configured from the environment (LiteLLM's ``environment_variables:`` section sets
these before it loads callbacks):

* ``COPAGE_STORE``: the store URL (default ``sqlite://copage.db``);
* ``COPAGE_RECALL_MODE``: ``speculative`` (default) or ``none``;
* ``COPAGE_TENANT``: the tenant of the conversations (default ``default``);
* ``COPAGE_RESIDENT_PAGES``, ``COPAGE_BOUNDARY``: paging settings of new conversations
  (default: copage's);
* ``COPAGE_SPECULATIVE_TOKENS``: the fill's allowance (default 1024);
* ``COPAGE_DENSE``: the fill's meaning channel (docs/dense.md): unset (default) on
  when its model's files are there (bundled in int8, or fetched), ``off`` never,
  ``auto`` required from where :func:`copage.dense.find_model` looks, else a model
  folder (required); a required folder is checked when the hook is made
  (``ModelMissing`` says to run ``copage dense fetch``), the encoder loaded at the
  first request that needs it;
* ``COPAGE_USE_USER``: ``0`` stops the ``user`` field naming the conversation;
* ``COPAGE_OTEL``: ``1`` exports OpenTelemetry traces over OTLP (also when the
  standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set and no tracer provider is).

Nothing is opened at import: the store is opened at the first request, and the
encoder's weights at the first question that ranks by meaning.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from copage.adapters.litellm.hook import CopageHook
from copage.core.dense_rank import DenseRanker
from copage.dense.default_channel import LazyEncoder
from copage.session import trace
from copage.session.speculate import DEFAULT_TOKENS

__all__ = ["LazyEncoder", "dense_from_env", "from_env", "hook"]


def _int(env: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


def dense_from_env(env: Mapping[str, str]) -> DenseRanker | None:
    """The fill's meaning channel ``COPAGE_DENSE`` asks for (module docstring): unset,
    copage's default (on when the model's files are installed); its vectors kept in
    copage.dense's cache file.

    Raises:
        ModelMissing: ``auto`` or a folder was asked for and the files are not there (the
            message says to run ``copage dense fetch``).
    """
    from copage.dense.default_channel import default_ranker

    return default_ranker(cache=True, env=env)


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
