"""copage as an MCP server (``pip install 'copage[mcp]'``; ``copage mcp``).

Tools: ``append_turns``, ``list_bookmarks``, ``recall_page``, ``search_pages``,
``list_conversations``; resource ``copage://conversations/{conversation}/bookmarks``.
See ``docs/mcp.md``.
"""

from __future__ import annotations

from copage.adapters._pool import ConversationPool
from copage.adapters.mcp.http import http_app, serve_http
from copage.adapters.mcp.server import BOOKMARKS_URI, INSTRUCTIONS, create_server

__all__ = ["BOOKMARKS_URI", "INSTRUCTIONS", "ConversationPool", "create_server", "http_app",
           "serve_http"]
