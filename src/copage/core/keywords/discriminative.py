"""``discriminative``: keywords that tell a page apart from every other page.

Candidates are the page's content words and two-word phrases (see ``terms``).
Each is scored by the "Fightin' Words" statistic of Monroe, Colaresi & Quinn
(2008, *Political Analysis* 16(4), eq. 16-22): the log-odds ratio of the term's
rate in the page versus the rest of the conversation, under an informative
Dirichlet prior, divided by its standard error (a z-score)::

    delta = ln((y_p + a_w) / (n_p + a0 - y_p - a_w)) - ln((y_r + a_w) / (n_r + a0 - y_r - a_w))
    z     = delta / sqrt(1 / (y_p + a_w) + 1 / (y_r + a_w))

with ``y_p``/``y_r`` the term's counts in the page/rest, ``n_p``/``n_r`` their
totals, and prior ``a_w = a0 * count_w / total`` (the whole conversation's term
distribution scaled to ``a0``). ``a0`` defaults to 2000 (``DEFAULT_ALPHA0``),
chosen on the two-conversation LoCoMo sample (pages of 10 turns, four keywords,
BM25 over the bookmarks with each QA question, top-1 credit): a0 = 100, 500,
1000, 2000, 5000 gave 0.20, 0.25, 0.28, 0.33, 0.33 (tfidf 0.27, heuristic 0.12).
A strong prior keeps a word said once in a page from outranking the page's
repeated specifics.

Keywords are then chosen greedily by ``z - penalty * taken[term]``: a term other
bookmarks already carry is worth less. Terms sharing a word with an already
chosen one are skipped (no ``"thai garden"`` plus ``"thai"``); a phrase competes
on its own only if it occurs at least twice in the page, and a chosen word that
only ever occurs inside one phrase is shown as that phrase when the phrase is
capitalised or occurs at least twice. Terms are
displayed capitalised when the page writes them so (``"Thai Garden"``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from math import log, sqrt

from copage.core.keywords.corpus import Corpus
from copage.core.keywords.extractor import check_n, taken_count
from copage.core.keywords.limits import bounded
from copage.core.keywords.names import PageNames, page_names
from copage.core.keywords.routable import routable, speaker_words
from copage.core.keywords.terms import (
    body,
    display_forms,
    is_bigram,
    term_counts,
    term_spans,
    tokenize,
)
from copage.core.types import Page, PageId

DEFAULT_ALPHA0 = 2000.0
"""Total pseudo-count of the informative Dirichlet prior."""
MIN_PHRASE_COUNT = 2
"""A two-word phrase must occur this often in the page to compete on its own."""
DEFAULT_PENALTY = 1.5
"""z-score points subtracted per other bookmark already using a term."""


_TINY = 1e-12


def fightin_words_z(
    y_page: int, n_page: int, y_rest: int, n_rest: int, alpha_w: float, alpha0: float
) -> float:
    """Monroe et al. (2008) z-score of one term, page versus rest (see module docstring)."""
    tiny = _TINY
    a_p = y_page + alpha_w
    a_r = y_rest + alpha_w
    delta = math.log(a_p / max(n_page + alpha0 - a_p, tiny)) - math.log(
        a_r / max(n_rest + alpha0 - a_r, tiny)
    )
    return delta / math.sqrt(1.0 / a_p + 1.0 / a_r)


def _page_counts(page: Page, corpus: Corpus) -> Mapping[str, int]:
    return corpus.tf(page.id) if page.id in corpus else term_counts(page.text)


VIEW_CACHE_PAGES = 128
"""Pages whose analysis an extractor keeps (about 60 KB each on LoCoMo text), the
most recently used; only pages of the corpus (closed pages) are kept."""


@dataclass(slots=True)
class PageView:
    """What extraction needs of one page that does not depend on the corpus.

    Built once per page and kept (see :meth:`DiscriminativeExtractor.view`): a
    bookmark refresh then costs the z-scores and the greedy choice only, not
    tokenizing the page again.

    Attributes:
        text: the page text it was built from (a cache hit must match it).
        counts: term counts of the page (``term_counts``).
        forms: display form of each term (``display_forms`` of the body).
        named: the page's names (``page_names``).
        order: first position of each term in the body.
        phrase_of: word -> the bigrams holding it (not joining a name to a word).
        eligible: terms that may be chosen at all, in text order: phrases seen at
            least ``MIN_PHRASE_COUNT`` times and not mixed, routable, no speaker name.
        shown: each eligible term's display key when nothing is chosen yet.
        static: corpus-free part of the rank score (``contrast``'s cues), if any.
    """

    text: str
    counts: Mapping[str, int]
    forms: dict[str, str]
    named: PageNames
    order: dict[str, int]
    phrase_of: dict[str, list[str]]
    eligible: tuple[str, ...]
    shown: dict[str, str] = field(default_factory=dict)
    static: dict[str, tuple[float, ...]] | None = None


def counted_at_noun_rank(scores: dict[str, float]) -> dict[str, float]:
    """``scores`` with a pair of a number and a word ("32 coffees", "walked 25") ranked
    just above that word at most: a number makes every small-talk line ("I had 32
    coffees") look unlike the others, while a question asks about the word. The pair
    is still shown when it is chosen, so the number stays beside what it counts. On six
    chats answered by SmolLM2 (``docs/keywords-record.md``, sixth round) more
    pages holding a planted fact named it; LoCoMo routing unchanged."""
    for term, score in scores.items():
        first, _, second = term.partition(" ")
        if not second:
            continue
        word = second if first[:1].isdigit() else first if second[:1].isdigit() else None
        if word is not None and word in scores and score > scores[word]:
            scores[term] = scores[word] + 1e-6
    return scores


class DiscriminativeExtractor:
    """Fightin' Words keywords with a penalty for terms other bookmarks use."""

    name = "discriminative"
    uses_corpus = True
    refresh_with_corpus = True

    def __init__(self, alpha0: float = DEFAULT_ALPHA0, penalty: float = DEFAULT_PENALTY,
                 skip_speakers: bool = True) -> None:
        if not (isinstance(alpha0, int | float) and alpha0 > 0):
            raise ValueError(f"alpha0 must be a positive number, got {alpha0!r}")
        if not (isinstance(penalty, int | float) and penalty >= 0):
            raise ValueError(f"penalty must be a non-negative number, got {penalty!r}")
        self.alpha0 = float(alpha0)
        self.penalty = float(penalty)
        self.skip_speakers = bool(skip_speakers)
        self._views: dict[PageId, PageView] = {}

    def view(self, page: Page, corpus: Corpus) -> PageView:
        """The page's corpus-free analysis, from the cache when the page text matches."""
        cached = self._views.get(page.id)
        if cached is not None and (cached.text is page.text or cached.text == page.text):
            self._views[page.id] = self._views.pop(page.id)  # most recently used last
            return cached
        text = body(page.text)
        counts = _page_counts(page, corpus)
        toks = tokenize(text)  # one tokenization of the page serves both passes
        spans = list(term_spans(text, toks))
        forms = display_forms(text, spans)
        named = page_names(text, toks, spans)
        phrase_of: dict[str, list[str]] = {}
        for term in forms:
            if is_bigram(term) and term not in named.mixed:
                for word in term.split(" "):
                    phrase_of.setdefault(word, []).append(term)
        speakers = speaker_words(page) if self.skip_speakers else set()
        eligible = tuple(
            term for term in counts
            if not (is_bigram(term) and (counts[term] < MIN_PHRASE_COUNT or term in named.mixed))
            and routable(term)  # numbers, dates, times alone: see ``routable``
            and not (speakers and speakers & set(term.split(" ")))
        )
        view = PageView(page.text, counts, forms, named,
                        {term: i for i, term in enumerate(forms)}, phrase_of, eligible)
        view.shown = {term: self._shown_as(view, term, set()) for term in eligible}
        view.static = self.static_scores(page, view)
        if page.id in corpus:  # a closed page: it may be extracted again (a refresh)
            self._views.pop(page.id, None)
            if len(self._views) >= VIEW_CACHE_PAGES:
                self._views.pop(next(iter(self._views)))
            self._views[page.id] = view
        return view

    def static_scores(self, page: Page, view: PageView) -> dict[str, tuple[float, ...]] | None:
        """Corpus-free score parts per eligible term (none here; ``contrast`` has cues)."""
        return None

    def z_scores(self, page: Page, corpus: Corpus, view: PageView,
                 terms: Iterable[str]) -> dict[str, float]:
        """z-score of each of ``terms`` (terms of ``page``) against the rest of ``corpus``."""
        inside = page.id in corpus
        counts = view.counts
        n_page = sum(counts.values())
        n_conv = corpus.total + (0 if inside else n_page)
        n_rest = n_conv - n_page
        out: dict[str, float] = {}
        a0 = self.alpha0
        cf = corpus.cf
        for term in terms:  # fightin_words_z, inlined: this loop is most of a refresh
            y = counts[term]
            conv = cf(term) + (0 if inside else y)
            alpha_w = a0 * conv / n_conv
            a_p = y + alpha_w
            a_r = conv - y + alpha_w
            delta = log(a_p / max(n_page + a0 - a_p, _TINY)) - log(
                a_r / max(n_rest + a0 - a_r, _TINY)
            )
            out[term] = round(delta / sqrt(1.0 / a_p + 1.0 / a_r), 9)  # ties stay ties
        return out

    def scores(self, page: Page, corpus: Corpus) -> dict[str, float]:
        """z-score of every term of ``page`` against the rest of ``corpus``."""
        view = self.view(page, corpus)
        return self.z_scores(page, corpus, view, view.counts)

    def rank_terms(self, page: Page, corpus: Corpus, view: PageView) -> dict[str, float]:
        """The score eligible terms are chosen by (here the z-score)."""
        return self.z_scores(page, corpus, view, view.eligible)

    def _shown_as(self, view: PageView, term: str, used: set[str]) -> str:
        """The lower-cased form ``term`` is shown as: its whole name or phrase."""
        name = view.named.whole.get(term)
        if name is not None:
            key = name.lower()
            return term if set(key.split(" ")) & used - set(term.split(" ")) else key
        if is_bigram(term):
            return term
        return self._as_name(term, view.counts, view.forms, view.phrase_of, used)

    def extract(
        self, page: Page, corpus: Corpus, n: int, *, taken: Mapping[str, int] | None = None
    ) -> tuple[str, ...]:
        """Up to ``n`` terms that best distinguish ``page``; cost O(page size).

        The page's analysis is cached (:meth:`view`), so extracting again for the
        same page (a stale bookmark's refresh) costs only the corpus-dependent scores.
        """
        check_n(n)
        if n == 0:
            return ()
        view = self.view(page, corpus)
        counts, forms, named, order = view.counts, view.forms, view.named, view.order
        z = counted_at_noun_rank(self.rank_terms(page, corpus, view))
        end = len(order)

        if self.penalty and taken:
            def key(term: str) -> tuple[float, int, int]:
                uses = taken_count(taken, term, forms.get(term, term))
                shown = view.shown[term]
                if shown != term:  # shown as its name or phrase: penalise those uses too
                    uses += taken_count(taken, shown,
                                        named.names.get(shown, forms.get(shown, shown)))
                score = z[term] - self.penalty * uses
                return (-score, -counts[term], order.get(term, end))
        else:
            def key(term: str) -> tuple[float, int, int]:
                return (-z[term], -counts[term], order.get(term, end))

        chosen: list[str] = []
        used_words: set[str] = set()
        for term in sorted(z, key=key):
            if len(chosen) == n:
                break
            if set(term.split(" ")) & used_words:
                continue
            term = self._shown_as(view, term, used_words)
            chosen.append(term)
            used_words |= set(term.split(" "))
        # A name shown whole is its display form lower-cased ("dr. okafor" for "Dr. Okafor",
        # whose key is "dr okafor"): give it back its capitals.
        by_shown = {d.lower(): d for d in named.names.values()}
        return bounded(named.names.get(t) or by_shown.get(t) or forms.get(t, t) for t in chosen)

    @staticmethod
    def _as_name(
        word: str,
        counts: Mapping[str, int],
        forms: Mapping[str, str],
        phrase_of: Mapping[str, list[str]],
        used_words: set[str],
    ) -> str:
        """The phrase ``word`` always occurs in ("Thai" -> "Thai Garden"), else ``word``.

        The phrase must be capitalised or occur at least ``MIN_PHRASE_COUNT`` times.
        """
        whole = [b for b in phrase_of.get(word, []) if counts[b] == counts[word]]
        if len(whole) != 1:
            return word
        phrase = whole[0]
        named = forms.get(phrase, phrase) != phrase
        if not (named or counts[phrase] >= MIN_PHRASE_COUNT):
            return word
        if set(phrase.split(" ")) & used_words - {word}:
            return word
        return phrase

    def extract_all(self, pages: Sequence[Page], n: int) -> dict[PageId, tuple[str, ...]]:
        """Keywords of every page in page order, each pass penalising earlier pages' choices."""
        check_n(n)
        corpus = Corpus.from_pages(pages)
        taken: Counter[str] = Counter()
        out: dict[PageId, tuple[str, ...]] = {}
        for page in pages:
            keywords = self.extract(page, corpus, n, taken=taken)
            out[page.id] = keywords
            taken.update(kw.lower() for kw in keywords)
        return out
