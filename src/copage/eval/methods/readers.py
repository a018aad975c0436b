"""Reference readers: the LLM-free stand-in for a model's tool use, one rule per recall kind.

A reader sees what the model sees (the question and the bookmarks of the evicted
pages, in prompt order) and nothing else: no gold evidence, no page text. It
returns the arguments of the one tool call it makes, or None for no call. The
system then executes the call as it would for a model (see
:mod:`copage.eval.methods.bookmark`). Rules (also in ``docs/benchmark-methods.md``):

* ``page`` (``recall(page)``): rank the bookmarks by Okapi BM25 against the
  question (IDF over these bookmarks, :func:`copage.eval.routing.bm25_candidates`,
  the scorer of ``copage simulate``'s ``routing_top1``); recall the first when it
  shares at least one content word with the question (score > 0; ties: the
  earlier page), else make no call.
* ``query`` (``recall(query)``): call ``recall(query=<the question>)``; the pager
  resolves the query to the evicted page whose full text matches best.
* ``choose`` (the ``choose`` call of :class:`copage.session.PagedChat`): the
  ``page`` rule, on the same bookmarks: the best-matching bookmark's page, or
  none (the model's ``{"page": "none"}``) when no bookmark shares a word with
  the question.

A new way of recalling (a ``recall_mode`` of :class:`copage.session.PagedChat`)
is added by registering its reader here under the same name.

**Triggers.** Offline, *whether* a reader calls is not a model's decision but a
named rule, reported side by side (:data:`TRIGGERS`, :func:`decide`); *which*
page it picks stays the reader's rule above:

* ``never``: no call (no recall, the choose call answers ``none``): the floor;
* ``oracle``: a call exactly when a page holding evidence the prompt does not show
  yet (not resident, not in the speculative fill, not chosen) is evicted (the gold
  evidence is used only for *whether*): the ceiling of the reader's pick;
* ``oracle_router``: the *oracle router*, a reader that knows the evidence: it
  chooses or recalls the evicted page holding evidence still missing (the first
  in conversation order), one recall after another while evidence is missing, at
  most ``max_recalls`` and while the next call fits; each recall billed like any
  other. The ceiling of bookmark + recall: what a perfect model reaches with this
  prompt, beside the BM25-routed rows;
* ``rule`` (realistic): a call when one bookmark alone is the best match of the
  question's content words once stop words and the conversation's speaker names
  are dropped (a question sharing only a name, or tied between bookmarks,
  makes no call).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from copage.core.registry import Registry
from copage.core.text import content_words
from copage.eval.routing import bm25_candidates

ORACLE_ROUTER = "oracle_router"
TRIGGERS: tuple[str, ...] = ("never", "rule", "oracle", ORACLE_ROUTER)
"""The offline trigger rules of the bookmark methods' readers (see the module)."""
ORACLES: tuple[str, ...] = ("oracle", ORACLE_ROUTER)
"""The triggers that read the gold evidence: ceilings, never below ``never``
(:meth:`copage.eval.methods.bookmark.BookmarkConversation.build`)."""
DEFAULT_TRIGGER = "rule"

Bookmarks = Sequence[tuple[str, str]]
"""(page id, bookmark text) of the evicted pages, in the order the prompt lists them."""

Reader = Callable[[str, Bookmarks], dict[str, Any] | None]


def page_reader(question: str, bookmarks: Bookmarks) -> dict[str, Any] | None:
    """``{"page": id}`` of the best-matching bookmark, or None when none shares a word."""
    if not bookmarks:
        return None
    scores = bm25_candidates(question, [text for _, text in bookmarks])
    top = max(scores)
    if top <= 0:
        return None
    return {"page": bookmarks[scores.index(top)][0]}


def query_reader(question: str, bookmarks: Bookmarks) -> dict[str, Any] | None:
    """``{"query": question}`` whenever a page is evicted."""
    return {"query": question} if bookmarks else None


def choose_reader(question: str, bookmarks: Bookmarks) -> dict[str, Any] | None:
    """The page the choose call picks: :func:`page_reader`'s rule (None: ``none``)."""
    return page_reader(question, bookmarks)


READERS: Registry[Reader] = Registry("reader")
READERS.register("page", lambda: page_reader)
READERS.register("query", lambda: query_reader)
READERS.register("choose", lambda: choose_reader)


def rule_question(question: str, names: Collection[str]) -> str:
    """The question's content words without stop words and speaker names (the ``rule``
    trigger's query)."""
    drop = {n.lower() for n in names}
    return " ".join(w for w in content_words(question)
                    if w not in drop and w.removesuffix("s") not in drop)


def decide(kind: str, trigger: str, question: str, bookmarks: Bookmarks, *,
           names: Collection[str] = (), needed: Collection[str] = ()) -> dict[str, Any] | None:
    """The call of reader ``kind`` (``page``, ``query`` or ``choose``) under ``trigger``.

    ``names``: the conversation's speaker names (the ``rule`` trigger ignores them);
    ``needed``: the pages holding evidence the prompt does not show yet (the oracle
    triggers only).
    """
    if trigger not in TRIGGERS:
        raise ValueError(f"unknown trigger {trigger!r}; valid: {', '.join(TRIGGERS)}")
    READERS.check(kind)
    if not bookmarks or trigger == "never":
        return None
    texts = [text for _, text in bookmarks]
    if trigger == ORACLE_ROUTER:  # the page itself, whatever the recall kind
        return next(({"page": pid} for pid, _ in bookmarks if pid in needed), None)
    if trigger == "oracle":
        if not any(pid in needed for pid, _ in bookmarks):
            return None
        if kind == "query":
            return {"query": question}
        scores = bm25_candidates(question, texts)
        return {"page": bookmarks[scores.index(max(scores))][0]}
    scores = bm25_candidates(rule_question(question, names), texts)
    top = max(scores)
    if top <= 0 or scores.count(top) > 1:
        return None
    return {"query": question} if kind == "query" else {"page": bookmarks[scores.index(top)][0]}
