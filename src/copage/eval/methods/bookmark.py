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
   (:class:`~copage.session.Speculator`, the code of a real run) shows the turns of
   the evicted passages that best match the question (docs/retrieval.md) while they
   fit the fill allowance the budget plan gives it
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
from dataclasses import dataclass, field, replace
from typing import Any

from copage.core import prompt
from copage.core.pager import Pager
from copage.core.retrieval import BM25Index
from copage.core.text import index_terms, query_terms
from copage.core.tokens import default_tokenizer
from copage.core.types import PageId, page_id, page_index
from copage.eval.datasets.probes import Conversation, Probe
from copage.eval.methods.bookmark_pages import (
    BookmarkCache,
    build_memory,
    copy_pager,
    recall_call,
)
from copage.eval.methods.bookmark_plan import FILL_FRAME, BudgetPlan
from copage.eval.methods.bookmark_variant import Variant, speaker_names
from copage.eval.methods.method import (
    DOES_NOT_FIT,
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
from copage.eval.methods.probe_driver import ask_probe
from copage.eval.methods.readers import DEFAULT_TRIGGER, ORACLE_ROUTER, ORACLES, decide
from copage.eval.methods.recorder import Recorder
from copage.eval.routing import route
from copage.llm.chat_messages import text_of, tool_message
from copage.llm.model_types import ChatModel, ChatRequest
from copage.memory import PagedMemory
from copage.session import PagedChat, Speculator
from copage.session.choose import choose_request
from copage.session.prepare import plan_fill, prepare
from copage.session.speculate import FILL_HEADER, Speculation

ALL_RESIDENT = "every page resident"
NO_RECALL = "the reader made no call: recall reserve unused"
RECALL_NOT_MADE = "a recall over the budget was not made: the first call stands"


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


class BookmarkConversation(BudgetPlan):
    """A conversation paged once at the budget; probes are asked from the state after its last turn.

    The budget is planned for the whole probe (:meth:`_plan`): the calls of the
    reference path (a choose call, the first answer call and, with the tool, the
    call after one recall) are all billed, so the resident room is what is left
    after ``n`` copies of the fixed part and one recalled page.
    """

    def __init__(self, conversation: Conversation, settings: MethodSettings, variant: Variant,
                 cache: BookmarkCache | None = None) -> None:
        self.conversation, self.settings, self.variant = conversation, settings, variant
        self.cache = cache if cache is not None else BookmarkCache()
        steps = variant.steps
        self.choose_kind = "choose" if "choose" in steps else None
        self.tool_kind = ("query" if variant.by_query else "page") if "tool" in steps else None
        self.names = speaker_names(conversation)
        count = default_tokenizer().count
        self.question_tokens = max((count(p.question) for p in conversation.probes), default=0)
        self.shrink: list[str] = []
        self.speculator = Speculator(settings.speculative_threshold,
                                     relative=settings.speculative_relative,
                                     dense=variant.ranker())
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
            self._speculated[question] = plan_fill(
                self.speculator, self.pager, question, tokens=self.fill_allowance(question),
                record=False)
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
        # the runtime's one turn preparation: style, the fill planned above (placed after
        # the style, before the question, as PagedChat does), the request's billed tokens
        prep = prepare(state.pager, messages=[*state.messages, question_message(probe)],
                       tools=state.tools, style=self.settings.prompt_style,
                       offer_tool=self.tool_kind is not None, planned=spec, meter=False,
                       count=lambda m, t: message_tokens(m, t, self.tokenizer))
        messages, tools = list(prep.messages), prep.tools
        first = prep.tokens
        assert first is not None
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
            call = recall_call(str(n + 1), tool, args)
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
            chat = PagedChat(self.memory, rec, **self.variant.chat_options(
                self.settings, tokens=self.fill_allowance(probe.question)))
            record = await ask_probe(chat, probe.question, self.needed(probe), keep_pages=False)
        infos = tuple(RecallInfo(r.tool, r.arguments, r.status, r.page) for r in record.recalls)
        return MethodAnswer(record.answer, tuple(rec.calls), record.needed, record.evicted,
                            infos, record.speculative,
                            {"does_not_fit": True} if rec.calls and rec.calls[-1].refused else {})


@dataclass(frozen=True, slots=True)
class BookmarkMethod:
    """``bookmark_recall`` and its variants (``+query``, ``+speculative``, ``+copage``)."""

    name: str
    description: str
    variant: Variant = field(default_factory=Variant)
    uses_bookmarks: bool = True
    #: the pagers and overheads this method memoises across conversations and budgets
    cache: BookmarkCache = field(default_factory=BookmarkCache, compare=False, repr=False)

    def prepare(self, conversation: Conversation, settings: MethodSettings) -> BookmarkConversation:
        """Page the whole conversation at the budget."""
        return BookmarkConversation(conversation, settings, self.variant, self.cache)
