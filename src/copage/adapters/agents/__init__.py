"""copage for the OpenAI Agents SDK (``pip install 'copage[agents]'``).

``CopageSession`` is a ``Session`` whose history is paged; give the agent its
``recall_tool()``. See ``docs/agents-sdk.md``.
"""

from __future__ import annotations

from copage.adapters._extra import missing_extra

try:
    from copage.adapters.agents.paged_session import CopageSession
except ModuleNotFoundError as e:  # the extra is not installed: say which one
    raise missing_extra(e, "agents", "agents") from None

__all__ = ["CopageSession"]
