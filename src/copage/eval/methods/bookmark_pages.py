"""The bookmark methods' pagers: paging settings of a variant, the pager of a conversation
(built once per settings and memoised in a :class:`BookmarkCache`), its copies for
page-ins, the stored conversation of a model run, and the prompt's measured overhead
(see :mod:`copage.eval.methods.bookmark`)."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

from copage.core import prompt
from copage.core.boundaries import get_boundary
from copage.core.config import PagerConfig
from copage.core.pager import Pager
from copage.core.paginate import paginate
from copage.eval.datasets.probes import Conversation
from copage.eval.methods.bookmark_variant import Variant
from copage.eval.methods.method import INSTRUCTION, MethodSettings, message_tokens, request_tokens
from copage.eval.sim_pager import simulation_pager
from copage.llm.chat_messages import tool_message
from copage.memory import PagedMemory
from copage.session.choose import choose_request
from copage.session.prompts import ANSWER_ONLY_PREAMBLE

__all__ = ["BookmarkCache", "Overhead", "build_memory", "build_pager", "copy_pager", "measure",
           "pager_config", "recall_call"]


@dataclass(frozen=True, slots=True)
class Overhead:
    """What a conversation's prompt costs besides its resident pages (one measurement)."""

    fixed: int  # system text with every page evicted + tool schema
    recall: int  # the largest recall: call + page block
    recall_median: int  # the median recall
    whole: int  # the prompt with every page resident (no bookmark), question not included
    answer_only: int  # the system text of answer-only modes (no bookmark, no tool)
    choose: int  # the choose call with every page but the last evicted, question not included


class BookmarkCache:
    """What the bookmark methods memoise across the conversations and budgets of a run
    (owned by the method, :class:`~copage.eval.methods.bookmark.BookmarkMethod`): built
    pagers (read-only use only: the LLM-free view copies), page cuts, batch keywords and
    prompt overheads, each keyed by the conversation's and the settings' fingerprint."""

    __slots__ = ("keywords", "overhead", "pagers", "spans")

    def __init__(self) -> None:
        self.overhead: dict[tuple[str, str], Overhead] = {}
        self.pagers: dict[tuple[str, ...], Pager] = {}
        self.spans: dict[tuple[str, ...], Any] = {}
        self.keywords: dict[tuple[str, ...], Any] = {}


def pager_config(settings: MethodSettings, variant: Variant, resident_tokens: int = 10**9) -> PagerConfig:
    """The paging settings of a variant, with ``resident_tokens`` for the resident pages.

    The paper's methods page with the benchmark's settings and the paper's flat index
    (one bookmark per page); a ``copage`` variant with the library's defaults
    (``PagerConfig()``: boundary, policy, keywords, bookmark format, the bounded
    grouped index), each overridden only by a ``copage_*`` setting that is given.
    """
    if variant.copage:
        lib = PagerConfig()
        policy = settings.copage_policy or lib.policy
        config = replace(lib, boundary=settings.copage_boundary or lib.boundary, policy=policy,
                         keywords=settings.copage_keywords or lib.keywords,
                         recall_by_query=variant.by_query)
    else:
        policy = settings.policy
        config = PagerConfig(boundary=settings.boundary, policy=policy, keywords=settings.keywords,
                             bookmark_format=settings.format, recall_by_query=variant.by_query,
                             index="flat")
    if policy == "belady":
        raise ValueError("the bookmark methods cannot use the belady oracle policy "
                         "(it needs the future); use the paging experiment for it")
    return replace(config, resident_tokens=max(1, resident_tokens))


def copy_pager(pager: Pager) -> Pager:
    """An independent copy of ``pager`` for page-ins (its tokenizer, which cannot be
    copied, and its immutable pages and turns are shared, not copied)."""
    memo: dict[int, Any] = {id(pager.tokenizer): pager.tokenizer}
    for p in pager.pages:
        memo[id(p)] = p
        memo[id(p.turns)] = p.turns
        memo[id(p.text)] = p.text
    for t in pager.turns:
        memo[id(t)] = t
    memo[id(pager.changes.pending)] = type(pager.changes.pending)()  # the copy's changes are never stored
    memo[id(pager.search.passages)] = pager.search.passages  # derived from the shared pages
    return copy.deepcopy(pager, memo)


def build_memory(conversation: Conversation, config: PagerConfig) -> PagedMemory:
    """An in-memory paged conversation holding every turn (last page closed, bookmarks fresh)."""
    memory = PagedMemory(store="memory://", config=config)
    with memory.transaction() as mem:
        mem.add("system", INSTRUCTION)
        for t in conversation.turns:
            meta: dict[str, Any] = {"id": t.id, **dict(t.meta)}
            for key in ("speaker", "timestamp", "session"):
                if getattr(t, key) is not None:
                    meta[key] = getattr(t, key)
            mem.add(t.role, t.text, **meta)
        mem.close_page()
        mem.refresh_bookmarks()  # placement end, as copage simulate does
    return memory


def recall_call(pid: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"ref_{pid}", "type": "function",
         "function": {"name": tool, "arguments": json.dumps(arguments)}}]}


def _fingerprint(conversation: Conversation, config: PagerConfig) -> tuple[str, str]:
    h = hashlib.sha256()
    for t in conversation.turns:
        h.update(f"{t.id}\x00{t.role}\x00{t.text}\x00{t.session}\x00{t.timestamp}\x01".encode())
    cfg = json.dumps(replace(config, resident_tokens=1).to_dict(), sort_keys=True, default=str)
    return h.hexdigest(), cfg


def build_pager(conversation: Conversation, config: PagerConfig,
                cache: BookmarkCache | None = None) -> Pager:
    """The pager of :func:`build_memory` without a store (the same pages, bookmarks and
    resident set, tested), for the LLM-free view; bookmarks are made once at the end.
    Memoised in ``cache`` (a fresh one when None)."""
    cache = cache if cache is not None else BookmarkCache()
    pagers, spans, known_keywords = cache.pagers, cache.spans, cache.keywords
    conv, cfg = _fingerprint(conversation, config)
    key = (conv, cfg, str(config.resident_tokens))
    if key not in pagers:
        # Page cuts and keywords do not depend on the budget or the policy: made once
        # per conversation (as copage simulate does), then every budget replays the turns.
        cuts = (conv, config.boundary, repr(sorted(config.boundary_options.items())))
        if cuts not in spans:
            spans[cuts] = paginate(conversation.turns,
                                    get_boundary(config.boundary, **dict(config.boundary_options)))
        pager = simulation_pager(config, spans=spans[cuts], defer_bookmarks=True)
        pager.set_system(INSTRUCTION)
        for t in conversation.turns:
            pager.add(t)
        pager.close_open_page()
        words = (*cuts, config.keywords, repr(sorted(config.keyword_options.items())),
                 str(config.n_keywords), config.tokenizer)
        if words not in known_keywords:
            known_keywords[words] = pager.batch_keywords()
        pager.refresh_all_bookmarks(known_keywords[words])
        for memo in (pagers, spans, known_keywords):
            if len(memo) >= 256:
                memo.pop(next(iter(memo)))
        pagers[key] = pager
    return pagers[key]


def measure(conversation: Conversation, config: PagerConfig,
            cache: BookmarkCache | None = None) -> Overhead:
    """The prompt's fixed part with every page evicted, and the largest recall (memoised in ``cache``; a fresh one when None)."""
    cache = cache if cache is not None else BookmarkCache()
    overheads = cache.overhead
    key = _fingerprint(conversation, config)
    if key not in overheads:
        pager = build_pager(conversation, replace(config, resident_tokens=10**9), cache)
        tok = pager.tokenizer
        books = [pager.bookmark(p.id).text for p in pager.pages]
        system = (INSTRUCTION + "\n\n" + prompt.preamble(config.tool_name, by_query=config.recall_by_query)
                  + "\n\n" + prompt.bookmarks_block(books))
        fixed = message_tokens([{"role": "system", "content": system}], pager.tools(), tok)
        recalls = sorted(message_tokens([recall_call(p.id, config.tool_name, {"page": p.id}),
                                         tool_message("x", prompt.page_block(p.id, p.text))], [], tok)
                         for p in pager.pages)
        recall = recalls[-1] if recalls else 0
        median = recalls[len(recalls) // 2] if recalls else 0
        ctx = pager.context()
        answer_only = message_tokens([{"role": "system", "content": INSTRUCTION + "\n\n"
                                       + ANSWER_ONLY_PREAMBLE}], [], tok)
        evicted = build_pager(conversation, replace(config, resident_tokens=1), cache)
        choose = request_tokens(choose_request(evicted, "", schema=False, temperature=None,
                                               max_tokens=1), tok)
        overheads[key] = Overhead(fixed, recall, median, message_tokens(ctx.messages, ctx.tools, tok),
                                  answer_only, choose)
    return overheads[key]
