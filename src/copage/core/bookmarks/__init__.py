"""Bookmark formats: how an evicted page is shown in the prompt.

Build a format by name with :func:`get_format` and a bookmark with
:func:`make_bookmark`. All formats are deterministic and offline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol, runtime_checkable

from copage.core.keywords.limits import bounded
from copage.core.prompt import plain_keyword
from copage.core.registry import Registry, check_options
from copage.core.text import content_words
from copage.core.tokens import Tokenizer
from copage.core.types import Bookmark, Page

__all__ = ["FORMATS", "BookmarkFormat", "get_format", "keyword_text", "make_bookmark"]


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


def _compact(**options: object) -> BookmarkFormat:
    from copage.core.bookmarks.formats import CompactFormat

    check_options("bookmark format 'compact'", options, [])
    return CompactFormat()


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
FORMATS.register("compact", _compact)
FORMATS.register("snippet", _snippet)
FORMATS.register("structured", _structured)
FORMATS.register("gist", _gist)


def get_format(name: str, **options: object) -> BookmarkFormat:
    """The bookmark format called ``name``; raises ``UnknownNameError`` listing valid names.

    Options: ``snippet(max_words=15)``, ``gist(max_words=60, sentences=2)``.
    """
    return FORMATS.create(name, **options)


def make_bookmark(
    page: Page,
    keywords: Iterable[str],
    fmt: BookmarkFormat,
    tokenizer: Tokenizer,
    max_tokens: int | None = None,
) -> Bookmark:
    """The bookmark of ``page``: rendered by ``fmt``, its cost counted by ``tokenizer``.

    Keywords are bounded first (``copage.core.keywords.limits``): long words cut,
    at most four words and 40 characters each, so a pasted blob stays small
    whichever extractor chose it.

    ``max_tokens``: the bookmark's token cap. Keywords are then taken in the order
    given while the rendered bookmark fits, skipping one that would not fit or that
    adds no word not already shown ("community" after "trans community"); if not
    even the first fits, it is shown alone. None: every keyword, no cap. A format
    with a ``keyword_text(page, keywords)`` method (``snippet``, ``structured``,
    ``gist``) has that counted instead: their sentence or fields come on top.
    """
    if isinstance(keywords, str):
        raise TypeError("keywords must be a sequence of strings, not one string")
    # A payload's SYSTEM or PAGE is no keyword: shown, it reads as the prompt's structure.
    kws = tuple(k for k in (plain_keyword(k) for k in bounded(keywords)) if k)
    if max_tokens is not None:
        kws = _pack(page, kws, fmt, tokenizer, max_tokens)
    text = fmt.render(page, kws)
    return Bookmark(
        page_id=page.id, keywords=kws, text=text, tokens=tokenizer.count(text), format=fmt.name
    )


def keyword_text(fmt: BookmarkFormat) -> Callable[[Page, tuple[str, ...]], str]:
    """How ``fmt`` shows a keyword list: its ``keyword_text`` method where it has one
    (``snippet``, ``structured``, ``gist``: the list as ``minimal`` shows it, their
    sentence or fields aside), else its whole rendering. The cap counts this, and the
    preamble's example bookmark is drawn with it."""
    return getattr(fmt, "keyword_text", fmt.render)


def _pack(page: Page, keywords: tuple[str, ...], fmt: BookmarkFormat, tokenizer: Tokenizer,
          max_tokens: int) -> tuple[str, ...]:
    """The keywords, in order, that fit a ``max_tokens`` bookmark (see :func:`make_bookmark`)."""
    measure = keyword_text(fmt)
    out: list[str] = []
    shown: set[str] = set()
    for kw in keywords:
        words = set(content_words(kw)) or set(kw.lower().split())
        if words <= shown:
            continue
        cost = tokenizer.count(measure(page, (*out, kw)))
        if cost > max_tokens:
            continue
        out.append(kw)
        shown |= words
        if cost == max_tokens:
            break
    return tuple(out) if out or not keywords else keywords[:1]
