"""``llm-batch``: all pages in one call, with an explicit cross-page non-overlap constraint.

Paper section 6: "a single LLM call covering all pages at once, with an explicit
non-overlap constraint across pages." When the pages do not fit the prompt
budget they are sent in consecutive chunks, one call each; later chunks are told
the keywords earlier chunks used. The constraint is also enforced on the reply:
a keyword already given to an earlier page is dropped from a later one (unless
it is that page's only keyword). Live, one call per page avoids the keywords
other bookmarks already use (``taken``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from copage.core.keywords import Corpus, check_n
from copage.core.types import Page, PageId
from copage.eval.llmkeywords.generator import LLMGenerator, check_pages, chunk_pages
from copage.eval.llmkeywords.keyword_prompts import batch_prompt
from copage.eval.llmkeywords.parse import parse_keyword_list, parse_page_keywords


def dedupe_across(
    keywords: Mapping[PageId, tuple[str, ...]], used: set[str]
) -> dict[PageId, tuple[str, ...]]:
    """Drop keywords already in ``used`` (lower-cased), page by page; ``used`` is updated.

    A page whose keywords would all go keeps its first one.
    """
    out: dict[PageId, tuple[str, ...]] = {}
    for pid, kws in keywords.items():
        fresh = tuple(k for k in kws if k.lower() not in used) or kws[:1]
        used.update(k.lower() for k in fresh)
        out[pid] = fresh
    return out


class BatchGenerator(LLMGenerator):
    """One call per chunk of pages (usually one per conversation), non-overlapping keywords."""

    name = "llm-batch"

    def extract(
        self, page: Page, corpus: Corpus, n: int, *, taken: Mapping[str, int] | None = None
    ) -> tuple[str, ...]:
        """Keywords of one page (live): one call that avoids keywords in ``taken``."""
        check_n(n)
        if n == 0:
            return ()
        used = sorted(k for k, c in (taken or {}).items() if c > 0)
        prompt = batch_prompt([page], n, page_chars=self.options.page_chars, used=used)
        reply = self.ask(prompt)
        kws: tuple[str, ...] | None = None
        if reply is not None:
            kws = parse_page_keywords(reply, [page.id], n).get(page.id)
            kws = kws or parse_keyword_list(reply, n)
        if not kws:
            return self.offline(page, corpus, n, "no usable keywords in reply")
        return dedupe_across({page.id: kws}, set(used))[page.id]

    def extract_all(self, pages: Sequence[Page], n: int) -> dict[PageId, tuple[str, ...]]:
        """Keywords of every page: one call per chunk, chunks in order."""
        check_pages(pages, n)
        if n == 0 or not pages:
            return {p.id: () for p in pages}
        o = self.options
        used: set[str] = set()
        got: dict[PageId, tuple[str, ...]] = {}
        for chunk in chunk_pages(pages, o.prompt_chars, o.page_chars):
            ids = [p.id for p in chunk]
            reply = self.ask(batch_prompt(chunk, n, page_chars=o.page_chars, used=sorted(used)))
            parsed = parse_page_keywords(reply, ids, n) if reply is not None else {}
            got.update(dedupe_across({pid: parsed[pid] for pid in ids if pid in parsed}, used))
        corpus = Corpus.from_pages(pages)
        return {
            p.id: got.get(p.id) or self.offline(p, corpus, n, "page missing from the reply")
            for p in pages
        }
