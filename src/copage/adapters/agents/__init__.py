"""copage for the OpenAI Agents SDK (``pip install 'copage[agents]'``).

``CopageSession`` is a ``Session`` whose history is paged; give the agent its
``recall_tool()``. See ``docs/agents-sdk.md``.
"""

from __future__ import annotations

from copage.adapters.agents.session import CopageSession

__all__ = ["CopageSession"]
