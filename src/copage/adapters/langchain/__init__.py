"""copage for LangChain v1 agents (``pip install 'copage[langchain]'``).

``CopageMiddleware`` keeps an agent's history in paged memory; see ``docs/langchain.md``.
"""

from __future__ import annotations

from copage.adapters._extra import missing_extra

try:
    from copage.adapters.langchain.middleware import CopageMiddleware
except ModuleNotFoundError as e:  # the extra is not installed: say which one
    raise missing_extra(e, "langchain", "langchain") from None

__all__ = ["CopageMiddleware"]
