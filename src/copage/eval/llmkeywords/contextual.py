"""``llm-contextual``: one model call per page, with a digest of every other page.

Paper section 6: "one LLM call per page. The prompt includes a one-line digest
of every other page so the model can pick distinguishing facts." The digest of
a page is its ``heuristic`` keywords (live, for pages this generator has not
seen, its top TF-IDF words from the corpus).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from copage.core.keywords import Corpus, check_n
from copage.core.types import Page, PageId
from copage.eval.llmkeywords.generator import (
    DIGEST_KEYWORDS,
    LLMGenerator,
    check_pages,
    other_digests,
)
from copage.eval.llmkeywords.keyword_prompts import contextual_prompt
from copage.eval.llmkeywords.parse import parse_keyword_list


class ContextualGenerator(LLMGenerator):
    """One call per page; the prompt carries one digest line per other page."""

    name = "llm-contextual"

    def _prompt(self, page: Page, others: Mapping[PageId, Sequence[str]], n: int) -> str:
        o = self.options
        return contextual_prompt(
            page, others, n, page_chars=o.page_chars, digest_chars=o.digest_chars
        )

    def extract(
        self, page: Page, corpus: Corpus, n: int, *, taken: Mapping[str, int] | None = None
    ) -> tuple[str, ...]:
        """Keywords of one page (live): one call, digests of the corpus's other pages."""
        check_n(n)
        if n == 0:
            return ()
        known = self.known_digests
        known[page.id] = self.fallback.extract(page, corpus, DIGEST_KEYWORDS)
        reply = self.ask(self._prompt(page, other_digests(page.id, corpus, known), n))
        kws = parse_keyword_list(reply, n) if reply is not None else None
        return kws if kws else self.offline(page, corpus, n, "no usable keyword list in reply")

    def extract_all(self, pages: Sequence[Page], n: int) -> dict[PageId, tuple[str, ...]]:
        """Keywords of every page: one call per page, all calls concurrent."""
        check_pages(pages, n)
        if n == 0 or not pages:
            return {p.id: () for p in pages}
        digests = self.heuristic(pages, DIGEST_KEYWORDS)
        prompts = [
            self._prompt(p, {q: d for q, d in digests.items() if q != p.id}, n) for p in pages
        ]
        replies = self.ask_many(prompts)
        corpus = Corpus.from_pages(pages)
        out: dict[PageId, tuple[str, ...]] = {}
        for page, reply in zip(pages, replies, strict=True):
            kws = parse_keyword_list(reply, n) if reply is not None else None
            out[page.id] = kws or self.offline(page, corpus, n, "no usable keyword list in reply")
        return out
