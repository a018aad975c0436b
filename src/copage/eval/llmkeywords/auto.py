"""``auto``: the paper's selection rule between ``hybrid`` and ``llm-batch``.

Paper section 6: "use hybrid when the heuristic base is informative; use
llm-batch when it is not. A practical proxy is the average TF-IDF mass of
heuristic-extracted tokens." The mass is defined in :mod:`copage.eval.llmkeywords.mass`;
a conversation whose mass is at least ``threshold`` gets ``hybrid``, otherwise
``llm-batch``. :data:`DEFAULT_THRESHOLD` was chosen LLM-free on development data
only (see ``docs/llm-bookmarks.md``).

Batch (``extract_all``) decides once per conversation. Live (``extract``) the
mass is the running mean over the pages seen so far (each measured against the
corpus when it closed; the pager adds a page to the corpus before asking for its
keywords), so the choice can change while a conversation grows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import fmean

from copage.core.keywords import Corpus, check_n
from copage.core.types import Page, PageId
from copage.eval.llmkeywords.batch import BatchGenerator
from copage.eval.llmkeywords.generator import LLMGenerator, LLMOptions, check_pages
from copage.eval.llmkeywords.hybrid import HybridGenerator
from copage.eval.llmkeywords.mass import heuristic_mass, page_mass
from copage.llm.model_types import ChatModel

DEFAULT_THRESHOLD = 0.544
"""Midpoint of the gap between the ``controlled`` preset (lowest conversation mass
0.660) and LoCoMo conv-26 (0.428), pages ``fixed_10``, four keywords."""


class AutoGenerator(LLMGenerator):
    """``hybrid`` when the heuristic keywords' relative TF-IDF mass >= threshold, else ``llm-batch``."""

    name = "auto"

    def __init__(
        self, model: ChatModel, options: LLMOptions | None = None, *,
        threshold: float = DEFAULT_THRESHOLD, extend: bool = False,
    ) -> None:
        super().__init__(model, options)
        if isinstance(threshold, bool) or not (
            isinstance(threshold, int | float) and math.isfinite(threshold)
        ):
            raise ValueError(f"threshold must be a number, got {threshold!r}")
        self.threshold = float(threshold)
        self.hybrid = HybridGenerator(model, self.options, extend=extend)
        self.batch = BatchGenerator(model, self.options)
        self.hybrid.stats = self.batch.stats = self.stats
        self.last_mass: float | None = None
        self.last_choice: str | None = None
        self._live_masses: dict[PageId, float] = {}

    def choose(self, mass: float) -> LLMGenerator:
        """The generator the rule picks for a conversation of this mass."""
        chosen: LLMGenerator = self.hybrid if mass >= self.threshold else self.batch
        self.last_mass, self.last_choice = mass, chosen.name
        return chosen

    def extract(
        self, page: Page, corpus: Corpus, n: int, *, taken: Mapping[str, int] | None = None
    ) -> tuple[str, ...]:
        """Keywords of one page (live), by the generator the running mass picks."""
        check_n(n)
        if n == 0:
            return ()
        if page.id not in self._live_masses and page.id in corpus:
            value = page_mass(page, corpus, self.fallback.extract(page, corpus, n))
            if value is not None:
                self._live_masses[page.id] = value
        mass = fmean(self._live_masses.values()) if self._live_masses else 0.0
        return self.choose(mass).extract(page, corpus, n, taken=taken)

    def extract_all(self, pages: Sequence[Page], n: int) -> dict[PageId, tuple[str, ...]]:
        """Keywords of every page by the generator the conversation's mass picks."""
        check_pages(pages, n)
        if not pages:
            return {}
        return self.choose(heuristic_mass(pages, max(n, 1))).extract_all(pages, n)

