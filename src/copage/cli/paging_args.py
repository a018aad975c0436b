"""The paging options shared by commands that create conversations (serve, mcp)."""

from __future__ import annotations

import argparse
from typing import Any

#: PagerConfig fields these options set (an option left out keeps the library default).
PAGING_FIELDS = ("boundary", "policy", "resident_pages", "resident_tokens", "budget_tokens",
                 "budget_floor", "keywords", "n_keywords", "bookmark_tokens", "bookmark_format")


def add_paging_options(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """Add the paging option group; its help lists the registries' valid names."""
    from copage.core.bookmarks import FORMATS
    from copage.core.boundaries import BOUNDARIES
    from copage.core.config import DEFAULT_KEYWORDS
    from copage.core.keywords import EXTRACTORS
    from copage.core.policies import POLICIES

    def listing(names: list[str]) -> str:
        return ", ".join(names)

    online = [n for n in POLICIES.names() if n != "belady"]  # belady needs the future
    g = parser.add_argument_group("paging of new conversations")
    g.add_argument("--boundary", help=listing(BOUNDARIES.names()))
    g.add_argument("--policy", help=listing(online))
    g.add_argument("-k", "--resident-pages", dest="resident_pages", type=int)
    g.add_argument("--resident-tokens", dest="resident_tokens", type=int)
    g.add_argument("--budget-tokens", dest="budget_tokens", type=int,
                   help="the default paging: nothing is evicted while the closed pages fit "
                        "this many tokens (default 48000; set it below the model's context "
                        "window less its answer and the fill, e.g. 4000 for an 8k model)")
    g.add_argument("--budget-floor", dest="budget_floor", type=int,
                   help="past --budget-tokens, pages go at once down to this many tokens "
                        "(default 2000)")
    g.add_argument("--keywords", help=f"{listing(EXTRACTORS.names())} (default {DEFAULT_KEYWORDS})")
    g.add_argument("--n-keywords", dest="n_keywords", type=int)
    g.add_argument("--bookmark-tokens", dest="bookmark_tokens", type=int,
                   help="each bookmark's token cap (default 12; 0: no cap)")
    g.add_argument("--format", dest="bookmark_format", help=listing(FORMATS.names()))
    return g


def paging_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The paging options given on the command line."""
    return {k: getattr(args, k) for k in PAGING_FIELDS if getattr(args, k, None) is not None}
