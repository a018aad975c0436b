"""copage for LangChain v1 agents (``pip install 'copage[langchain]'``).

``CopageMiddleware`` keeps an agent's history in paged memory; see ``docs/langchain.md``.
"""

from __future__ import annotations

from copage.adapters.langchain.middleware import CopageMiddleware

__all__ = ["CopageMiddleware"]
