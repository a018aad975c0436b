"""Shared machinery of the LLM keyword generators: calls, fallback, statistics.

Generators are synchronous (the pager is); each batch of requests runs
concurrently on the shared event loop of :mod:`copage.llm.runner` (bounded by
``concurrency``), so one HTTP client per model is reused. Called from inside a
running loop, the batch runs in a worker thread with its own loop, and the
clients opened there are closed when it ends.
"""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from copage.core.keywords import Corpus, KeywordExtractor, check_n, get_extractor
from copage.core.keywords.terms import is_bigram
from copage.core.keywords.tfidf import smooth_idf
from copage.core.types import Page, PageId
from copage.eval.llmkeywords.keyword_prompts import SYSTEM
from copage.llm.model_types import ChatModel, ChatRequest, ChatResponse
from copage.llm.runner import run_blocking

log = logging.getLogger("copage.eval.llmkeywords")

DIGEST_KEYWORDS = 4
"""Keywords per digest line (heuristic keywords of the other pages)."""


class LLMKeywordWarning(UserWarning):
    """A model reply was unusable for some pages; the offline fallback was used."""


@dataclass
class GeneratorStats:
    """Counts kept by a generator: model calls, failed calls, pages that fell back."""

    calls: int = 0
    failed_calls: int = 0
    fallback_pages: int = 0
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {"calls": self.calls, "failed_calls": self.failed_calls,
                "fallback_pages": self.fallback_pages}


@dataclass(frozen=True, slots=True)
class LLMOptions:
    """Options shared by the LLM generators.

    Attributes:
        temperature: sampling temperature (0: as deterministic as the provider allows).
        max_tokens: output limit per call (None: provider default).
        page_chars: page text is clipped to this many characters in a prompt.
        prompt_chars: budget of page text per batch call; more pages are chunked.
        digest_chars: budget of the other-pages digest in a prompt.
        concurrency: requests in flight at once for per-page calls.
    """

    temperature: float = 0.0
    max_tokens: int | None = 1024
    page_chars: int = 4000
    prompt_chars: int = 24000
    digest_chars: int = 6000
    concurrency: int = 8

    def __post_init__(self) -> None:
        for name in ("page_chars", "prompt_chars", "digest_chars", "concurrency"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _run(coro: Any) -> Any:
    """Run a batch of calls from the (synchronous) pager: on the shared loop, or, when
    called inside a running loop, on a worker thread whose clients are closed after."""
    return run_blocking(coro)


class LLMGenerator:
    """Base of the LLM generators: request helpers, offline fallback, stats."""

    name = "llm"
    uses_corpus = True  # digests of other pages come from the corpus
    refresh_with_corpus = False  # a refresh would be another model call

    def __init__(self, model: ChatModel, options: LLMOptions | None = None) -> None:
        if not hasattr(model, "complete"):
            raise TypeError(f"model must be a ChatModel (with async complete()), got {model!r}")
        self.model = model
        self.options = options or LLMOptions()
        self.fallback: KeywordExtractor = get_extractor("heuristic")
        self.stats = GeneratorStats()
        # Heuristic digests of pages seen by live ``extract`` calls (their text is gone later).
        self.known_digests: dict[PageId, tuple[str, ...]] = {}

    def request(self, prompt: str) -> ChatRequest:
        """A chat request for ``prompt`` with the generator system message."""
        return ChatRequest(
            messages=({"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}),
            temperature=self.options.temperature, max_tokens=self.options.max_tokens,
        )

    def ask_many(self, prompts: Sequence[str]) -> list[str | None]:
        """Reply texts of ``prompts`` (run concurrently); None where a call failed."""
        sem_size = self.options.concurrency

        async def go() -> list[ChatResponse | BaseException]:
            sem = asyncio.Semaphore(sem_size)

            async def one(p: str) -> ChatResponse:
                async with sem:
                    return await self.model.complete(self.request(p))

            return await asyncio.gather(*(one(p) for p in prompts), return_exceptions=True)

        results: list[ChatResponse | BaseException] = _run(go())
        out: list[str | None] = []
        for r in results:
            self.stats.calls += 1
            if isinstance(r, ChatResponse):
                out.append(r.text)
                continue
            if not isinstance(r, Exception):
                raise r
            self.stats.failed_calls += 1
            self.warn(f"model call failed ({type(r).__name__}: {str(r)[:200]})")
            out.append(None)
        return out

    def ask(self, prompt: str) -> str | None:
        """Reply text of one prompt; None when the call failed."""
        return self.ask_many([prompt])[0]

    def warn(self, message: str) -> None:
        """Warn (``LLMKeywordWarning``) and log at WARNING level."""
        text = f"{self.name} keywords: {message}"
        self.stats.notes.append(text)
        log.warning(text)
        warnings.warn(text, LLMKeywordWarning, stacklevel=3)

    def offline(self, page: Page, corpus: Corpus, n: int, why: str) -> tuple[str, ...]:
        """The fallback extractor's keywords for ``page``, with a warning saying why."""
        self.stats.fallback_pages += 1
        self.warn(f"page {page.id}: {why}; using offline 'heuristic' keywords")
        return self.fallback.extract(page, corpus, n)

    def heuristic(self, pages: Sequence[Page], n: int) -> dict[PageId, tuple[str, ...]]:
        """Heuristic keywords of ``pages`` (the digests and the hybrid base)."""
        return self.fallback.extract_all(pages, n)

    def extract(
        self, page: Page, corpus: Corpus, n: int, *, taken: Mapping[str, int] | None = None
    ) -> tuple[str, ...]:
        raise NotImplementedError

    def extract_all(self, pages: Sequence[Page], n: int) -> dict[PageId, tuple[str, ...]]:
        raise NotImplementedError


def corpus_digest(corpus: Corpus, pid: PageId, k: int = DIGEST_KEYWORDS) -> tuple[str, ...]:
    """Top ``k`` single words of a corpus page by TF-IDF (digest when its text is unknown)."""
    n = corpus.n_pages
    scored = sorted(
        ((-c * smooth_idf(n, corpus.df(t)), t) for t, c in corpus.tf(pid).items()
         if not is_bigram(t)),
    )
    return tuple(t for _, t in scored[:k])


def other_digests(
    pid: PageId, corpus: Corpus, known: Mapping[PageId, tuple[str, ...]]
) -> dict[PageId, tuple[str, ...]]:
    """Digest of every corpus page other than ``pid`` (known heuristic keywords first)."""
    return {
        other: known.get(other) or corpus_digest(corpus, other)
        for other in corpus.page_ids() if other != pid
    }


def chunk_pages(pages: Sequence[Page], budget: int, per_page: int) -> list[list[Page]]:
    """Consecutive groups of pages whose clipped text fits in ``budget`` characters."""
    chunks: list[list[Page]] = []
    current: list[Page] = []
    used = 0
    for p in pages:
        size = min(len(p.text), per_page) + 20
        if current and used + size > budget:
            chunks.append(current)
            current, used = [], 0
        current.append(p)
        used += size
    if current:
        chunks.append(current)
    return chunks


def check_pages(pages: Sequence[Page], n: int) -> int:
    """Validate the ``extract_all`` arguments; return ``n``."""
    check_n(n)
    ids = [p.id for p in pages]
    if len(set(ids)) != len(ids):
        raise ValueError("pages must have distinct ids")
    return n
