"""copage for the OpenAI Agents SDK (``pip install 'copage[agents]'``).

``CopageSession`` is a ``Session`` whose history is paged; give the agent its
``recall_tool()``. See ``docs/agents-sdk.md``.
"""

from __future__ import annotations

try:
    from copage.adapters.agents.session import CopageSession
except ModuleNotFoundError as e:  # the extra is not installed: say which one
    if (e.name or "").startswith("copage"):
        raise
    package = (e.name or "").split(".")[0]
    raise ModuleNotFoundError(
        f"copage.adapters.agents needs the {package!r} package, from the 'agents' extra: "
        "pip install 'copage[agents]'", name=e.name) from None

__all__ = ["CopageSession"]
