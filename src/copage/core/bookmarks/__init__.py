"""Bookmark formats: how an evicted page is shown in the prompt.

Build a format by name with :func:`get_format` and a bookmark with
:func:`make_bookmark`. All formats are deterministic and offline.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from copage.core.keywords.limits import bounded
from copage.core.registry import Registry, check_options
from copage.core.tokens import Tokenizer
from copage.core.types import Bookmark, Page

__all__ = ["FORMATS", "BookmarkFormat", "get_format", "make_bookmark"]


@runtime_checkable
class BookmarkFormat(Protocol):
    """Renders a page's bookmark text from its keywords."""

    name: str

    def render(self, page: Page, keywords: tuple[str, ...]) -> str:
        """The bookmark text of ``page``."""
        ...


def _minimal(**options: object) -> BookmarkFormat:
    from copage.core.bookmarks.formats import MinimalFormat

    check_options("bookmark format 'minimal'", options, [])
    return MinimalFormat()


def _snippet(**options: object) -> BookmarkFormat:
    from copage.core.bookmarks.formats import SnippetFormat

    check_options("bookmark format 'snippet'", options, ["max_words"])
    return SnippetFormat(**options)  # type: ignore[arg-type]


def _structured(**options: object) -> BookmarkFormat:
    from copage.core.bookmarks.formats import StructuredFormat

    check_options("bookmark format 'structured'", options, [])
    return StructuredFormat()


def _gist(**options: object) -> BookmarkFormat:
    from copage.core.bookmarks.formats import GistFormat

    check_options("bookmark format 'gist'", options, ["max_words", "sentences"])
    return GistFormat(**options)  # type: ignore[arg-type]


FORMATS: Registry[BookmarkFormat] = Registry("bookmark format")
FORMATS.register("minimal", _minimal)
FORMATS.register("snippet", _snippet)
FORMATS.register("structured", _structured)
FORMATS.register("gist", _gist)


def get_format(name: str, **options: object) -> BookmarkFormat:
    """The bookmark format called ``name``; raises ``UnknownNameError`` listing valid names.

    Options: ``snippet(max_words=15)``, ``gist(max_words=60, sentences=2)``.
    """
    return FORMATS.create(name, **options)


def make_bookmark(
    page: Page, keywords: Iterable[str], fmt: BookmarkFormat, tokenizer: Tokenizer
) -> Bookmark:
    """The bookmark of ``page``: rendered by ``fmt``, its cost counted by ``tokenizer``.

    Keywords are bounded first (``copage.core.keywords.limits``): long words cut,
    at most four words and 40 characters each, so a pasted blob stays small
    whichever extractor chose it.
    """
    if isinstance(keywords, str):
        raise TypeError("keywords must be a sequence of strings, not one string")
    kws = bounded(keywords)
    text = fmt.render(page, kws)
    return Bookmark(
        page_id=page.id, keywords=kws, text=text, tokens=tokenizer.count(text), format=fmt.name
    )
