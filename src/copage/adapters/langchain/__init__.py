"""copage for LangChain v1 agents (``pip install 'copage[langchain]'``).

``CopageMiddleware`` keeps an agent's history in paged memory; see ``docs/langchain.md``.
"""

from __future__ import annotations

try:
    from copage.adapters.langchain.middleware import CopageMiddleware
except ModuleNotFoundError as e:  # the extra is not installed: say which one
    if (e.name or "").startswith("copage"):
        raise
    package = (e.name or "").split(".")[0]
    raise ModuleNotFoundError(
        f"copage.adapters.langchain needs the {package!r} package, from the 'langchain' extra: "
        "pip install 'copage[langchain]'", name=e.name) from None

__all__ = ["CopageMiddleware"]
