"""copage for LiteLLM's proxy (``pip install 'copage[litellm]'``).

``CopageHook`` is a LiteLLM ``CustomLogger`` that pages each chat request and stores
its answer; :mod:`copage.adapters.litellm.proxy` holds one configured from the
environment, to name in LiteLLM's ``config.yaml``
(``callbacks: copage.adapters.litellm.proxy.hook``). See ``docs/litellm.md``.
"""

from __future__ import annotations

from copage.adapters.litellm.hook import CopageHook, hook_mode

__all__ = ["CopageHook", "hook_mode"]
