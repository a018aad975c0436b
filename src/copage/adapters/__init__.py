"""Adapters that put copage inside agent frameworks, each behind its own extra.

* :mod:`copage.adapters.mcp`: an MCP server (``pip install 'copage[mcp]'``, ``copage mcp``);
* :mod:`copage.adapters.langchain`: ``CopageMiddleware`` for LangChain v1 ``create_agent``
  (``copage[langchain]``);
* :mod:`copage.adapters.agents`: ``CopageSession`` for the OpenAI Agents SDK
  (``copage[agents]``).

Nothing is imported here: each subpackage imports its framework when it is used.
"""
