"""``hybrid``: heuristic keywords plus one model-chosen cross-page-discriminative keyword.

Paper section 6: "start from the heuristic keywords and use a single LLM call to
add one cross-page-discriminative keyword to each page." To keep the extractor
contract (at most ``n`` keywords) the base is the first ``n - 1`` heuristic
keywords and the model's keyword comes last; ``extend=True`` keeps all ``n``
heuristic keywords and adds the model's as number ``n + 1`` (the paper's
literal reading, one keyword more than the other generators). A page the reply
misses keeps its ``n`` heuristic keywords (with a warning).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from copage.core.keywords import Corpus, check_n
from copage.core.types import Page, PageId
from copage.eval.llmkeywords.generator import (
    DIGEST_KEYWORDS,
    LLMGenerator,
    LLMOptions,
    check_pages,
    chunk_pages,
    other_digests,
)
from copage.eval.llmkeywords.keyword_prompts import hybrid_prompt
from copage.eval.llmkeywords.parse import parse_keyword_list, parse_page_keywords
from copage.llm.model_types import ChatModel


class HybridGenerator(LLMGenerator):
    """Heuristic base plus one discriminative keyword per page, one call per chunk."""

    name = "hybrid"

    def __init__(
        self, model: ChatModel, options: LLMOptions | None = None, *, extend: bool = False
    ) -> None:
        super().__init__(model, options)
        self.extend = bool(extend)

    def _base_n(self, n: int) -> int:
        return n if self.extend else n - 1

    def _join(
        self, base: tuple[str, ...], new: tuple[str, ...] | None, banned: set[str]
    ) -> tuple[str, ...] | None:
        """``base`` plus the first new keyword not already in ``base`` or ``banned``."""
        have = {k.lower() for k in base} | banned
        for k in new or ():
            if k.lower() not in have:
                banned.add(k.lower())
                return (*base, k)
        return None

    def extract(
        self, page: Page, corpus: Corpus, n: int, *, taken: Mapping[str, int] | None = None
    ) -> tuple[str, ...]:
        """Keywords of one page (live): heuristic base plus one keyword from one call."""
        check_n(n)
        if n == 0:
            return ()
        full = self.fallback.extract(page, corpus, n)
        self.known_digests[page.id] = full[:DIGEST_KEYWORDS]
        base = full[: self._base_n(n)]
        others = other_digests(page.id, corpus, self.known_digests)
        o = self.options
        reply = self.ask(
            hybrid_prompt([page], {page.id: base}, others, page_chars=o.page_chars,
                          digest_chars=o.digest_chars)
        )
        new: tuple[str, ...] | None = None
        if reply is not None:
            new = parse_page_keywords(reply, [page.id], 3).get(page.id)
            new = new or parse_keyword_list(reply, 3)
        banned = {k for k, c in (taken or {}).items() if c > 0}
        joined = self._join(base, new, banned)
        if joined is None:
            self.offline(page, corpus, n, "no usable new keyword in reply")
            return full
        return joined

    def extract_all(self, pages: Sequence[Page], n: int) -> dict[PageId, tuple[str, ...]]:
        """Keywords of every page: heuristic base, then one call per chunk adds one keyword."""
        check_pages(pages, n)
        if n == 0 or not pages:
            return {p.id: () for p in pages}
        full = self.heuristic(pages, n)
        base = {pid: kws[: self._base_n(n)] for pid, kws in full.items()}
        digests = {pid: kws[:DIGEST_KEYWORDS] for pid, kws in full.items()}
        o = self.options
        corpus = Corpus.from_pages(pages)
        banned = {k.lower() for kws in base.values() for k in kws}
        out: dict[PageId, tuple[str, ...]] = {}
        for chunk in chunk_pages(pages, o.prompt_chars, o.page_chars):
            ids = {p.id for p in chunk}
            others = {pid: d for pid, d in digests.items() if pid not in ids}
            reply = self.ask(hybrid_prompt(chunk, base, others, page_chars=o.page_chars,
                                           digest_chars=o.digest_chars))
            parsed = parse_page_keywords(reply, sorted(ids), 3) if reply is not None else {}
            for p in chunk:
                joined = self._join(base[p.id], parsed.get(p.id), banned)
                if joined is None:
                    self.offline(p, corpus, n, "no usable new keyword in reply")
                    joined = full[p.id]
                out[p.id] = joined
        return out
