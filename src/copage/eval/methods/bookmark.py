"""Bookmark + recall (copage, paper section 3) and copage's own variants, at a token budget.

The conversation is paged with a :class:`~copage.memory.PagedMemory` whose resident
pages are bounded in *tokens*, planned for the whole probe's bill
(:meth:`BookmarkConversation._plan`): the choose call, every answer call (two with
the recall tool: the first call and the one after a recall) with its fixed part
(instruction, recall preamble and tool schema, bookmarks, the longest question) and
page-ins, and one recalled page (``recall_reserve``; by default the largest page)
must fit the budget; the fixed parts shrink by a documented rule when they do not,
and a probe that still cannot fit "does not fit". When the whole conversation fits
in one call, every page stays resident (nothing to recall). Evicted pages appear as
bookmarks and the model gets the ``recall`` tool (through
:class:`~copage.session.PagedChat`, probes asked with ``keep_pages=False`` so each
probe starts from the state after the whole conversation).

LLM-free view of a probe, with no look at the gold evidence (the steps of the
variant's recall mode, in the order :class:`PagedChat` runs them):

1. ``speculative`` variants: the system's speculative fill
   (:class:`~copage.session.Speculator`, the code of a real run) shows the evicted
   pages whose full text best matches the question (BM25, best first, the first
   above the threshold) while they fit the fill allowance the budget plan gives it
   (:attr:`BookmarkConversation.fill`), in one message just before the question;
   they are not made resident, always.
2. ``choose`` variants: the ``choose`` reader (:mod:`.readers`) picks a page from
   the question and the bookmarks left; it is paged in (read-only, on a copy).
3. The prompt is built from that state in the prompt style
   (``MethodSettings.prompt_style``, as :class:`PagedChat` styles it: without the
   tool, answer-only modes have no bookmarks).
4. Modes with the tool: the reference reader of the recall kind (``page`` or
   ``query``) decides on one tool call from the question and the bookmarks
   left; the system executes it read-only (the recalled page's text is appended
   as a tool result, as the recall loop does).

The prompt tokens are billed per call and summed (``MethodPrompt.calls``): the
``choose`` call, the first answer call, and the answer call after the tool reader's
recall (which holds the whole first prompt again, the tool call and its result).
Whether the tool reader calls is the offline *trigger* (``never``, ``rule``,
``oracle``: :mod:`.readers`); which page it picks is its rule.

``routing`` (the credit of the bookmarks when a needed page is evicted) is
measured afterwards for the report; the reader never sees it.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
from dataclasses import dataclass, field, replace
from typing import Any

from copage.core import prompt
from copage.core.boundaries import get_boundary
from copage.core.config import PagerConfig
from copage.core.pager import Pager
from copage.core.paginate import paginate
from copage.core.retrieval import BM25Index
from copage.core.text import content_words, index_terms, query_terms
from copage.core.tokens import default_tokenizer
from copage.core.types import PageId, page_id, page_index
from copage.eval.datasets.probes import Conversation, Probe
from copage.eval.methods.method import (
    DOES_NOT_FIT,
    INSTRUCTION,
    MethodAnswer,
    MethodPrompt,
    MethodSettings,
    RecallInfo,
    add_parts,
    call_parts,
    does_not_fit,
    message_tokens,
    question_message,
    request_parts,
    request_tokens,
)
from copage.eval.methods.readers import DEFAULT_TRIGGER, ORACLE_ROUTER, ORACLES, decide
from copage.eval.methods.recorder import Recorder
from copage.eval.methods.templates import session_templates_id
from copage.eval.routing import route
from copage.llm.chat_messages import text_of, tool_message
from copage.llm.model_types import ChatModel, ChatRequest
from copage.memory import PagedMemory
from copage.session import PagedChat, Speculator, with_fill
from copage.session.choose import choose_request
from copage.session.modes import parse_mode
from copage.session.prompts import ANSWER_ONLY_PREAMBLE, REMINDER, styled
from copage.session.speculate import FILL_HEADER, Speculation

ALL_RESIDENT = "every page resident"
FILL_FRAME = 8
"""Tokens of the speculative fill's message framing (role, separators), kept off its
allowance (:attr:`BookmarkConversation.fill`)."""
NO_RECALL = "the reader made no call: recall reserve unused"
RECALL_NOT_MADE = "a recall over the budget was not made: the first call stands"


FINER: dict[str, tuple[str, ...]] = {"session": ("fixed_10", "fixed_5"), "fixed_10": ("fixed_5",)}
"""Finer page boundaries the budget plan falls back to, in order (see ``_plan``)."""


def speaker_names(conversation: Conversation) -> frozenset[str]:
    """The lower-cased words of the conversation's speaker names (and the two roles)."""
    names = {"user", "assistant"}
    for t in conversation.turns:
        if t.speaker:
            names.update(content_words(t.speaker))
            names.update(w.lower() for w in t.speaker.split())
    return frozenset(names)


RECALL_MODES: dict[str, str] = {
    "page": "tool", "query": "tool", "choose": "choose", "choose+tool": "choose+tool",
    "none": "none",
}
"""Recall kind of a bookmark method -> ``recall_mode`` of :class:`PagedChat` (without
``speculative``, which :attr:`Variant.speculative` adds)."""


@dataclass(frozen=True, slots=True)
class Variant:
    """Which copage features a bookmark method uses.

    Attributes:
        recall: the recall kind (:data:`RECALL_MODES`): ``page`` (the paper's
            ``recall(page)`` tool), ``query`` (``recall(query)`` allowed too),
            ``choose`` (:class:`PagedChat`'s ``choose`` mode: one constrained call
            picks a page, then the answer without a tool) or ``choose+tool`` (the
            same, the recall tool still offered). Each step has its reference
            reader (:mod:`.readers`): ``choose`` for the choose call, ``page`` or
            ``query`` for the tool; ``none``: neither (only with ``speculative``).
        speculative: the speculative fill before each probe.
        copage: copage's defaults (``PagerConfig()``: its boundary, policy, keywords
            and bounded index) instead of the paper's settings.
    """

    recall: str = "page"
    speculative: bool = False
    copage: bool = False

    def __post_init__(self) -> None:
        if self.recall not in RECALL_MODES:
            raise ValueError(f"unknown recall kind {self.recall!r}; valid: {', '.join(RECALL_MODES)}")

    @property
    def by_query(self) -> bool:
        """True when ``recall(query=...)`` is offered."""
        return self.recall == "query"

    @property
    def mode(self) -> str:
        """The ``recall_mode`` of a model run (``speculative+`` first when speculative)."""
        mode = RECALL_MODES[self.recall]
        if not self.speculative:
            return mode
        return "speculative" if mode == "none" else f"speculative+{mode}"

    @property
    def steps(self) -> tuple[str, ...]:
        """The steps of :attr:`mode`, in the order they run."""
        return () if self.mode == "none" else tuple(self.mode.split("+"))

    @classmethod
    def of_mode(cls, mode: str, *, copage: bool = False) -> Variant:
        """The variant running ``PagedChat``'s recall ``mode`` (``auto`` is not a mode here)."""
        m = parse_mode(mode)
        recall = {(False, True): "page", (True, False): "choose", (True, True): "choose+tool",
                  (False, False): "none"}[(m.choose, m.tool)]
        return cls(recall=recall, speculative=m.speculative, copage=copage)

    def chat_options(self, settings: MethodSettings) -> dict[str, Any]:
        """Keyword arguments of :class:`PagedChat` for a model run of this variant."""
        return {"max_recalls_per_turn": settings.max_recalls, "recall_mode": self.mode,
                "prompt": settings.prompt_style,
                "speculative_threshold": settings.speculative_threshold,
                "speculative_relative": settings.speculative_relative,
                "temperature": settings.temperature, "max_tokens": settings.max_tokens}

    def config(self, settings: MethodSettings) -> dict[str, Any]:
        """What of this variant changes its prompts, for the resume key: the recall mode,
        the prompt style, and the templates of :class:`PagedChat`'s prompt styles and
        choose call."""
        return {"recall_mode": self.mode, "prompt_style": settings.prompt_style,
                "session_templates": session_templates_id()}


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


def build_pager(conversation: Conversation, config: PagerConfig) -> Pager:
    """The pager of :func:`build_memory` without a store (the same pages, bookmarks and
    resident set, tested), for the LLM-free view; bookmarks are made once at the end."""
    conv, cfg = _fingerprint(conversation, config)
    key = (conv, cfg, str(config.resident_tokens))
    if key not in _PAGERS:
        # Page cuts and keywords do not depend on the budget or the policy: made once
        # per conversation (as copage simulate does), then every budget replays the turns.
        cuts = (conv, config.boundary, repr(sorted(config.boundary_options.items())))
        if cuts not in _SPANS:
            _SPANS[cuts] = paginate(conversation.turns,
                                    get_boundary(config.boundary, **dict(config.boundary_options)))
        pager = Pager(config, defer_bookmarks=True, spans=_SPANS[cuts])
        pager.set_system(INSTRUCTION)
        for t in conversation.turns:
            pager.add(t)
        pager.close_open_page()
        words = (*cuts, config.keywords, repr(sorted(config.keyword_options.items())),
                 str(config.n_keywords), config.tokenizer)
        if words not in _KEYWORDS:
            _KEYWORDS[words] = pager.batch_keywords()
        pager.refresh_all_bookmarks(_KEYWORDS[words])
        for memo in (_PAGERS, _SPANS, _KEYWORDS):
            if len(memo) >= 256:
                memo.pop(next(iter(memo)))
        _PAGERS[key] = pager
    return _PAGERS[key]


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


def _call(pid: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"ref_{pid}", "type": "function",
         "function": {"name": tool, "arguments": json.dumps(arguments)}}]}


@dataclass(frozen=True, slots=True)
class Overhead:
    """What a conversation's prompt costs besides its resident pages (one measurement)."""

    fixed: int  # system text with every page evicted + tool schema
    recall: int  # the largest recall: call + page block
    recall_median: int  # the median recall
    whole: int  # the prompt with every page resident (no bookmark), question not included
    answer_only: int  # the system text of answer-only modes (no bookmark, no tool)
    choose: int  # the choose call with every page but the last evicted, question not included


_OVERHEAD: dict[tuple[str, str], Overhead] = {}
_PAGERS: dict[tuple[str, ...], Pager] = {}  # read-only use only: the LLM-free view copies
_SPANS: dict[tuple[str, ...], Any] = {}
_KEYWORDS: dict[tuple[str, ...], Any] = {}


def _fingerprint(conversation: Conversation, config: PagerConfig) -> tuple[str, str]:
    h = hashlib.sha256()
    for t in conversation.turns:
        h.update(f"{t.id}\x00{t.role}\x00{t.text}\x00{t.session}\x00{t.timestamp}\x01".encode())
    cfg = json.dumps(replace(config, resident_tokens=1).to_dict(), sort_keys=True, default=str)
    return h.hexdigest(), cfg


def measure(conversation: Conversation, config: PagerConfig) -> Overhead:
    """The prompt's fixed part with every page evicted, and the largest recall (memoised)."""
    key = _fingerprint(conversation, config)
    if key not in _OVERHEAD:
        pager = build_pager(conversation, replace(config, resident_tokens=10**9))
        tok = pager.tokenizer
        books = [pager.bookmark(p.id).text for p in pager.pages]
        system = (INSTRUCTION + "\n\n" + prompt.preamble(config.tool_name, by_query=config.recall_by_query)
                  + "\n\n" + prompt.bookmarks_block(books))
        fixed = message_tokens([{"role": "system", "content": system}], pager.tools(), tok)
        recalls = sorted(message_tokens([_call(p.id, config.tool_name, {"page": p.id}),
                                         tool_message("x", prompt.page_block(p.id, p.text))], [], tok)
                         for p in pager.pages)
        recall = recalls[-1] if recalls else 0
        median = recalls[len(recalls) // 2] if recalls else 0
        ctx = pager.context()
        answer_only = message_tokens([{"role": "system", "content": INSTRUCTION + "\n\n"
                                       + ANSWER_ONLY_PREAMBLE}], [], tok)
        evicted = build_pager(conversation, replace(config, resident_tokens=1))
        choose = request_tokens(choose_request(evicted, "", schema=False, temperature=None,
                                               max_tokens=1), tok)
        _OVERHEAD[key] = Overhead(fixed, recall, median, message_tokens(ctx.messages, ctx.tools, tok),
                                  answer_only, choose)
    return _OVERHEAD[key]


@dataclass(frozen=True, slots=True)
class _State:
    """What the model sees before its first call (after any speculative page-in)."""

    messages: tuple[dict[str, Any], ...]
    tools: tuple[dict[str, Any], ...]
    tokens: int  # of messages + tools (the question not included)
    visible: frozenset[str]
    evicted: tuple[PageId, ...]
    bookmarks: tuple[str, ...]
    evicted_text: tuple[str, ...]
    pager: Pager = field(compare=False, repr=False)


class BookmarkConversation:
    """A conversation paged once at the budget; probes are asked from the state after its last turn.

    The budget is planned for the whole probe (:meth:`_plan`): the calls of the
    reference path (a choose call, the first answer call and, with the tool, the
    call after one recall) are all billed, so the resident room is what is left
    after ``n`` copies of the fixed part and one recalled page.
    """

    def __init__(self, conversation: Conversation, settings: MethodSettings, variant: Variant) -> None:
        self.conversation, self.settings, self.variant = conversation, settings, variant
        steps = variant.steps
        self.choose_kind = "choose" if "choose" in steps else None
        self.tool_kind = ("query" if variant.by_query else "page") if "tool" in steps else None
        self.names = speaker_names(conversation)
        count = default_tokenizer().count
        self.question_tokens = max((count(p.question) for p in conversation.probes), default=0)
        self.shrink: list[str] = []
        self.speculator = Speculator(settings.speculative_threshold,
                                     relative=settings.speculative_relative)
        self.fill = 0  # the speculative fill's allowance (tokens), set by the plan
        self._least_fill = 0
        self.config, self.pager = self._plan()
        self.tokenizer = self.pager.tokenizer
        self.page_of = {tid: p.index for p in self.pager.pages for tid in p.turn_ids}
        self.lock = asyncio.Lock()
        self._states: dict[tuple[PageId, ...], _State] = {}
        self._speculated: dict[str, Speculation] = {}
        self._page_tokens: dict[PageId, int] = {}
        self._indexes: dict[tuple[PageId, ...], BM25Index[int]] = {}
        self._memory: PagedMemory | None = None

    # ------------------------------------------------------------------ the budget plan
    def _plan(self) -> tuple[PagerConfig, Pager]:
        """The pager whose worst reference-path probe bills at most the budget.

        Rule (``docs/benchmark-methods.md``): every page resident when the whole
        conversation and the longest question fit in one call; else (or with
        ``resident_pages``, the paper's controlled setting) the resident room is
        shrunk until :meth:`worst` fits. When even no resident page leaves room,
        the fixed parts shrink in this order: bookmarks of fewer keywords (2, then
        1), then a recall reserve of the median page instead of the largest
        (recalls of larger pages then do not fit), then finer pages (:data:`FINER`:
        ``session`` -> ``fixed_10`` -> ``fixed_5``: smaller resident and recalled
        pages); a probe that still does not fit is "does not fit"
        (:data:`DOES_NOT_FIT`, a miss). What was shrunk is in :attr:`shrink`.

        Speculative variants split the room: ``speculative_window`` of it for the
        resident pages (at least one token), the rest is the fill's allowance
        (:attr:`fill`), billed in every answer call.
        """
        settings, variant = self.settings, self.variant
        budget, q = settings.budget, self.question_tokens
        base = pager_config(settings, variant)
        over = measure(self.conversation, base)
        if settings.resident_pages is None and over.whole + q <= budget:
            config = pager_config(settings, variant, 10**9)
            return config, build_pager(self.conversation, config)
        if settings.resident_pages is not None:
            config = replace(base, resident_pages=settings.resident_pages, resident_tokens=None)
            pager = build_pager(self.conversation, config)
            if self.worst(pager, self._reserve(over)) <= budget:
                if self.variant.speculative:  # the room the resident pages leave
                    spare = (budget - self.worst(pager, self._reserve(over))) // self.answer_calls
                    self.fill = max(0, spare - FILL_FRAME)
                return config, pager
            self.shrink.append(f"resident_pages={settings.resident_pages} does not fit: "
                               "resident room planned in tokens")
        n = self.answer_calls
        last: tuple[PagerConfig, Pager] | None = None
        least = kept = 0
        for boundary in (base.boundary, *FINER.get(base.boundary, ())):
            for nk in dict.fromkeys((base.n_keywords, min(2, base.n_keywords), 1)):
                cfg = replace(base, boundary=boundary, n_keywords=nk)
                over = measure(self.conversation, cfg)
                self._least_fill = self._one_page_fill(cfg)
                for reserve in dict.fromkeys((self._reserve(over), over.recall_median)
                                             if n == 2 else (0,)):
                    fixed = over.fixed if self.tool_kind else over.answer_only
                    choose = over.choose if self.choose_kind else 0
                    room = max(1, (budget - reserve - choose) // n - fixed - q)
                    pager = build_pager(self.conversation, replace(cfg, resident_tokens=self._split(room)))
                    for _ in range(6):
                        excess = self.worst(pager, reserve) - budget
                        if excess <= 0 or room <= 1:
                            break
                        room = max(1, room - max(1, -(-excess // n)))
                        pager = build_pager(self.conversation, replace(cfg, resident_tokens=self._split(room)))
                    worst = self.worst(pager, reserve)
                    resident = self._split(room)
                    if last is None or worst < least:  # the fallback: the least costly plan
                        last, least = (replace(cfg, resident_tokens=resident), pager), worst
                        kept = self.fill
                    if worst <= budget:
                        last = (replace(cfg, resident_tokens=resident), pager)
                        if boundary != base.boundary:
                            self.shrink.append(f"pages of {boundary} instead of {base.boundary}")
                        if nk != base.n_keywords:
                            self.shrink.append(f"bookmarks of {nk} keyword(s) instead of "
                                               f"{base.n_keywords}")
                        if n == 2 and reserve != self._reserve(over):
                            self.shrink.append(f"recall reserve of the median page ({reserve} "
                                               "tokens) instead of the largest")
                        return last
        self.shrink.append("the fixed part does not fit even shrunk: the least costly plan is "
                           "kept, and its probes over the budget do not fit")
        assert last is not None
        self.fill = kept
        return last

    def _split(self, room: int) -> int:
        """The resident pages' share of ``room``; a speculative variant's fill gets the
        rest (:attr:`fill`, its message framing taken off)."""
        if not self.variant.speculative:
            return room
        resident = max(1, int(room * self.settings.speculative_window))
        self.fill = max(room - resident - FILL_FRAME, self._least_fill)
        return resident

    def _one_page_fill(self, config: PagerConfig) -> int:
        """The allowance a fill of the largest page needs: a speculative variant's fill is
        never smaller (its resident room shrinks first), so one page always fits."""
        if not self.variant.speculative:
            return 0
        pager = build_pager(self.conversation, replace(config, resident_tokens=10**9))
        return max((self.speculator.plan_cost(pager, [p.id]) for p in pager.pages), default=0)

    @property
    def answer_calls(self) -> int:
        """Answer calls the plan bills: two with the recall tool (the call after one
        recall), unless ``plan_recall`` is off (a probe whose recall then exceeds the
        budget does not fit); else one."""
        return 2 if self.tool_kind and self.settings.plan_recall else 1

    def _reserve(self, over: Overhead) -> int:
        r = self.settings.recall_reserve
        return r if r is not None else over.recall

    def worst(self, pager: Pager, reserve: int) -> int:
        """Billed tokens of the costliest reference-path probe of ``pager``'s state (an
        upper bound): the choose call, ``n`` answer calls with the largest page-ins
        (speculative, chosen) added and the longest question, and one recalled page of
        ``reserve`` tokens."""
        if not pager.evicted:
            return self._answer_tokens(pager) + self.question_tokens
        # an upper bound: the fill's whole allowance, and the largest page chosen with
        # nothing evicted for it
        grown = self.fill + FILL_FRAME if self.variant.speculative else 0
        if self.choose_kind is not None:
            largest = max(pager.evicted, key=lambda p: pager.pages[page_index(p)].tokens)
            grown += message_tokens(prompt.turn_messages(list(pager.pages[page_index(largest)].turns)),
                                    [], pager.tokenizer)
        answer = self._answer_tokens(pager) + grown + self.question_tokens
        total = answer
        if self.answer_calls == 2:
            total += answer + reserve
        if self.choose_kind:
            total += request_tokens(choose_request(pager, "", schema=False, temperature=None,
                                                   max_tokens=1), pager.tokenizer) + self.question_tokens
        return total

    @property
    def memory(self) -> PagedMemory:
        """The stored conversation a model run uses (built on first use)."""
        if self._memory is None:
            self._memory = build_memory(self.conversation, self.config)
        return self._memory

    def needed(self, probe: Probe) -> tuple[PageId, ...]:
        """Pages holding the probe's evidence (for the report's recall metrics only)."""
        idx = sorted({self.page_of[e] for e in probe.evidence if e in self.page_of})
        return tuple(self.pager.pages[i].id for i in idx)

    # ------------------------------------------------------------------ states
    def _answer_tokens(self, pager: Pager) -> int:
        """The answer call's prompt tokens of ``pager``'s state before the question, in the
        variant's mode and prompt style."""
        ctx = pager.context()
        messages, tools = styled(self.settings.prompt_style, pager, ctx.messages, ctx.tools,
                                 offer_tool=self.tool_kind is not None)
        n = message_tokens(messages, tools, pager.tokenizer)
        if self.settings.prompt_style == "compact" and self.tool_kind and pager.evicted:
            n += pager.tokenizer.count("\n\n" + REMINDER.format(tool=pager.config.tool_name))
        return n

    def _snapshot(self, pager: Pager) -> _State:
        ctx = pager.context()
        visible = {t.id for p in pager.resident for t in pager.pages[page_index(p)].turns}
        visible.update(t.id for t in pager.open_turns)
        evicted = tuple(pager.evicted)
        return _State(tuple(ctx.messages), tuple(ctx.tools),
                      message_tokens(ctx.messages, ctx.tools, pager.tokenizer), frozenset(visible),
                      evicted, tuple(pager.bookmark(p).text for p in evicted),
                      tuple(pager.pages[page_index(p)].text for p in evicted), pager)

    def state(self, paged_in: tuple[PageId, ...] = ()) -> _State:
        """The state after paging in ``paged_in`` in order (a chosen page; the speculative
        fill pages nothing in), memoised; the built pager itself is never changed (a
        copy takes the page-ins)."""
        if paged_in not in self._states:
            if not paged_in:
                self._states[()] = self._snapshot(self.pager)
            else:
                pager = copy_pager(self.pager)
                for pid in paged_in:
                    pager.access(pid, kind="recall")
                self._states[paged_in] = self._snapshot(pager)
        return self._states[paged_in]

    def fill_allowance(self, question: str) -> int:
        """The fill's allowance for ``question``: the plan's :attr:`fill`, or, when the
        answer is the probe's only call (a speculative mode with no choose call and no
        recall tool), all that the budget leaves after that call's prompt without the
        fill: the fill spends the whole budget, as a retrieval baseline does."""
        if self.tool_kind is not None or self.choose_kind is not None:
            return self.fill
        first = self._answer_tokens(self.pager) + self.tokenizer.count(question)
        return max(self.fill, self.settings.budget - first - FILL_FRAME)

    def speculation(self, question: str) -> Speculation:
        """The speculative fill of ``question`` within :attr:`fill` (memoised; it does not
        depend on the trigger or the evidence)."""
        if question not in self._speculated:
            self._speculated[question] = self.speculator.plan(self.pager, question,
                                                              self.fill_allowance(question))
        return self._speculated[question]

    # ------------------------------------------------------------------ the LLM-free view
    def _resolve(self, state: _State, args: dict[str, Any], question: str) -> PageId | None:
        """The page a recall with ``args`` pages in (read-only), None if none."""
        if "page" in args:
            pid = str(args["page"])
            return pid if pid in state.evicted else None
        if state.evicted not in self._indexes:
            index: BM25Index[int] = BM25Index()
            for pid, text in zip(state.evicted, state.evicted_text, strict=True):
                index.add(page_index(pid), index_terms(text))
            self._indexes[state.evicted] = index
        best = self._indexes[state.evicted].best(query_terms(str(args.get("query", question))))
        return page_id(best.key) if best.key is not None else None

    def _page_message_tokens(self, pid: PageId) -> int:
        """Tokens of a page shown as messages (memoised)."""
        if pid not in self._page_tokens:
            page = self.pager.pages[page_index(pid)]
            self._page_tokens[pid] = message_tokens(prompt.turn_messages(list(page.turns)), [],
                                                    self.tokenizer)
        return self._page_tokens[pid]

    def _parts(self, total: int, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
               state: _State, paged: tuple[PageId, ...]) -> dict[str, int]:
        """The billed parts of one answer call (see :data:`copage.eval.methods.method.PARTS`)."""
        tok = self.tokenizer
        count = tok.count
        out: dict[str, int] = {}

        def add(part: str, n: int) -> None:
            out[part] = out.get(part, 0) + n

        marks = "\n".join(state.bookmarks)
        turns = 0
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        for i, m in enumerate(messages):
            role, content = m.get("role"), text_of(m.get("content"))
            if role == "system":
                books = count(marks) if marks and state.bookmarks[0] in content else 0
                add("bookmarks", books)
                add("preamble", max(0, count(content) - books))
            elif role == "tool" or (role == "user" and content.startswith(FILL_HEADER)):
                add("paged_in", count(content))
            elif m.get("tool_calls"):
                add("tool_calls", message_tokens([m], [], tok))
            elif i == last_user:
                add("question", count(content))
            else:
                turns += count(content)
        paged_tokens = sum(self._page_message_tokens(p) for p in paged)
        add("paged_in", min(paged_tokens, turns))
        add("recent_turns", max(0, turns - paged_tokens))
        add("tool_schema", message_tokens([], tools, tok))
        return call_parts(total, out)

    def missing(self, probe: Probe, visible: frozenset[str] | set[str]) -> tuple[PageId, ...]:
        """Pages holding an evidence turn of ``probe`` that is not in ``visible`` (the
        oracle triggers fire only for these: evidence still missing)."""
        idx = sorted({self.page_of[e] for e in probe.evidence
                      if e in self.page_of and e not in visible})
        return tuple(self.pager.pages[i].id for i in idx)

    def build(self, probe: Probe, trigger: str = DEFAULT_TRIGGER) -> MethodPrompt:
        """The prompts of the reference path under ``trigger`` (:data:`TRIGGERS`): the
        speculative page-in, the choose call and its pick, the first answer call and,
        when the tool reader calls, the answer call after each recall. Every call's
        prompt is billed. A probe whose first call exceeds the budget does not fit (a
        miss); a recall whose next call would exceed it is not served: under ``rule`` the
        model asked for it, so the probe is a miss billed for its calls so far; under the
        oracle triggers it is not made (the first call stands). An oracle trigger fires
        only for evidence still missing, and never makes a call that leaves less
        evidence in the prompt than making none (it knows the evidence): its row is a
        ceiling of the ``never`` row (nor one that makes a probe not fit that fits
        without it)."""
        built = self._build(probe, trigger)
        if trigger in ORACLES:
            floor = self._build(probe, "never")
            lost = not self._evidence(probe, floor) <= self._evidence(probe, built)
            if lost or (built.limit == DOES_NOT_FIT and floor.limit != DOES_NOT_FIT):
                return replace(floor, trigger=trigger, routing=built.routing)
        return built

    @staticmethod
    def _evidence(probe: Probe, built: MethodPrompt) -> frozenset[str]:
        return frozenset(e for e in probe.evidence if e in built.context_turn_ids)

    def _build(self, probe: Probe, trigger: str) -> MethodPrompt:
        question = probe.question
        spec = self.speculation(question) if self.variant.speculative else None
        filled = set(spec.paged_in) if spec is not None else set()
        base = self.state()
        needed = self.needed(probe)
        shown = set(base.visible) | set(spec.turns if spec is not None else ())
        missing = tuple(p for p in needed if p in base.evicted and p not in filled)
        evicted_before = tuple(p for p in needed if p in self.pager.evicted)
        credit: float | None = None
        if missing:  # measured for the report, after the reader decided
            want = {i for i, p in enumerate(base.evicted) if p in needed}
            credit = route(question, list(base.bookmarks), want).credit
        chosen: PageId | None = None
        calls: list[int] = []
        parts: list[dict[str, int]] = []
        if self.choose_kind is not None and base.evicted:  # the choose call, then its pick
            request = choose_request(base.pager, question, schema=False, temperature=None,
                                     max_tokens=1)
            c = request_tokens(request, self.tokenizer)
            q = self.tokenizer.count(question)
            calls.append(c)
            parts.append(call_parts(c, {"bookmarks": self.tokenizer.count("\n".join(base.bookmarks)),
                                        "question": q, "preamble": max(0, c - q - self.tokenizer.count(
                                            "\n".join(base.bookmarks)))}))
            pick = decide("choose", trigger, question, list(zip(base.evicted, base.bookmarks,
                                                                 strict=True)),
                          names=self.names, needed=self.missing(probe, shown))
            chosen = self._resolve(base, pick, question) if pick is not None else None
        paged = (chosen,) if chosen is not None else ()
        state = self.state(paged) if chosen is not None else base
        messages, tools = styled(self.settings.prompt_style, state.pager,
                                 [*state.messages, question_message(probe)], state.tools,
                                 offer_tool=self.tool_kind is not None)
        messages = with_fill(messages, spec)  # as PagedChat: after the style, before the question
        first = message_tokens(messages, tools, self.tokenizer)
        calls.append(first)
        parts.append(self._parts(first, messages, tools, state, paged))
        budget = self.settings.budget
        if sum(calls) > budget:
            if len(calls) > 1 and calls[0] <= budget:  # the choose call was sent and billed
                return replace(does_not_fit(needed, evicted_before, trigger, billed=tuple(calls[:1]),
                                            parts=parts[0], would_need=sum(calls)), routing=credit)
            return replace(does_not_fit(needed, evicted_before, trigger, would_need=sum(calls)),
                           routing=credit)
        visible = set(state.visible)
        if spec is not None:
            visible.update(spec.turns)  # the fill's turns (a passage fill shows parts of pages)
        recalled: list[PageId] = []
        would_need: int | None = None
        rounds = self.settings.max_recalls if trigger == ORACLE_ROUTER else 1
        tool = self.pager.config.tool_name
        for n in range(rounds):
            left = [(p, b) for p, b in zip(state.evicted, state.bookmarks, strict=True)
                    if p not in recalled]
            if self.tool_kind is None or not left:
                break
            args = decide(self.tool_kind, trigger, question, left, names=self.names,
                          needed=self.missing(probe, frozenset(visible)))
            if args is None:
                break
            page = self._resolve(state, args, question)
            if page is not None and page in recalled:  # a query resolving to a page shown
                page = None
            call = _call(str(n + 1), tool, args)
            result = (tool_message(f"ref_{n + 1}", prompt.page_block(
                page, self.pager.pages[page_index(page)].text)) if page is not None
                else tool_message(f"ref_{n + 1}", "error: no evicted page matches."))
            nxt = message_tokens([*messages, call, result], tools, self.tokenizer)
            if sum(calls) + nxt > budget:  # the call after this recall would go over the budget
                would_need = sum(calls) + nxt
                if trigger in ORACLES:  # a ceiling does not make it: the first call stands
                    break
                return replace(does_not_fit(needed, evicted_before, trigger, billed=tuple(calls),
                                            parts=add_parts(*parts), would_need=would_need),
                               routing=credit)
            messages += [call, result]
            calls.append(nxt)
            parts.append(self._parts(nxt, messages, tools, state, paged))
            if page is not None:
                recalled.append(page)
                visible.update(self.pager.pages[page_index(page)].turn_ids)
        fetched = chosen or (recalled[0] if recalled else None)
        if would_need is not None:
            limit: str | None = RECALL_NOT_MADE
        else:
            limit = ALL_RESIDENT if not base.evicted else (
                NO_RECALL if fetched is None and not filled else None)
        return MethodPrompt(messages, list(tools), frozenset(visible), sum(calls), needed,
                            evicted_before, ",".join([*paged, *recalled]) or None, credit, limit,
                            tuple(calls), add_parts(*parts), trigger, would_need)

    # ------------------------------------------------------------------ a model run
    async def answer(self, probe: Probe, model: ChatModel) -> MethodAnswer:
        """Ask through :class:`PagedChat` (recall loop); the page-ins are rolled back."""
        def parts_of(request: ChatRequest) -> dict[str, int]:  # the bookmark lines shown now
            shown = [b.text for pid, b in self.memory.bookmarks().items()
                     if not self.memory.is_resident(pid)]
            return request_parts(request, self.tokenizer, shown)

        rec = Recorder(model, self.tokenizer, self.settings.budget, parts_of=parts_of)
        async with self.lock:
            chat = PagedChat(self.memory, rec, **self.variant.chat_options(self.settings),
                             speculative_tokens=self.fill_allowance(probe.question))
            record = await chat.ask_probe(probe.question, self.needed(probe), keep_pages=False)
        infos = tuple(RecallInfo(r.tool, r.arguments, r.status, r.page) for r in record.recalls)
        return MethodAnswer(record.answer, tuple(rec.calls), record.needed, record.evicted,
                            infos, record.speculative,
                            {"does_not_fit": True} if rec.calls and rec.calls[-1].refused else {})


@dataclass(frozen=True, slots=True)
class BookmarkMethod:
    """``bookmark_recall`` and its variants (``+query``, ``+speculative``, ``+copage``)."""

    name: str
    description: str
    variant: Variant = Variant()
    uses_bookmarks: bool = True

    def prepare(self, conversation: Conversation, settings: MethodSettings) -> BookmarkConversation:
        """Page the whole conversation at the budget."""
        return BookmarkConversation(conversation, settings, self.variant)
