"""copage: cooperative memory paging with keyword bookmarks for long LLM conversations.

Public names are imported lazily so that ``import copage`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from copage.core.tokens import set_encoding_loader as _set_encoding_loader
from copage.encodings import load_bpe as _load_bpe

__version__ = "0.1.0"

# The core reads no files: it counts tokens with the encodings the edge loads.
_set_encoding_loader(_load_bpe)

_EXPORTS = {
    "PagedMemory": "copage.memory",
    "PagerConfig": "copage.core.config",
    "Pager": "copage.core.pager",
    "Turn": "copage.core.types",
    "Page": "copage.core.types",
    "Bookmark": "copage.core.types",
    "ToolCall": "copage.core.types",
    "replay": "copage.core.cache",
    "PageCache": "copage.core.cache",
    "open_store": "copage.stores",
    "PagedChat": "copage.session",
    "FillSettings": "copage.session",
    "get_model": "copage.llm",
}

__all__ = [
    "Bookmark", "FillSettings", "Page", "PageCache", "PagedChat", "PagedMemory", "Pager", "PagerConfig",
    "ToolCall", "Turn", "__version__", "get_model", "open_store", "replay",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'copage' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
