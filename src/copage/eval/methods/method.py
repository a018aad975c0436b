"""The method interface of the benchmark: prepare a conversation, build a probe's prompt, answer.

A :class:`Method` is stateless; :meth:`Method.prepare` returns a
:class:`PreparedConversation` holding one conversation's state (windows, retrieval
units, a pager). Its :meth:`~PreparedConversation.build` is the LLM-free part (the
prompt the model would see first, after the *reference reader*'s one tool call
for tool methods); :meth:`~PreparedConversation.answer` runs the model.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from copage.core.tokens import Tokenizer
from copage.core.types import PageId
from copage.eval.datasets.probes import Conversation, Probe
from copage.llm.chat_messages import text_of
from copage.llm.model_types import ChatModel, ChatRequest
from copage.session.prompts import PROMPT_STYLES
from copage.session.speculate import DEFAULT_THRESHOLD

ABSTAIN_ANSWER = "Not mentioned in the conversation"
"""LoCoMo's own wording for "no answer" (its category-5 option, which its scorer credits)."""

INSTRUCTION = (
    "You answer questions about the conversation below, using only what it says. "
    "Write the answer in the form of a short phrase, with exact words from the "
    "conversation whenever possible. If the conversation does not contain the answer, "
    f"reply: {ABSTAIN_ANSWER}."
)
"""The answering instruction of every method (LoCoMo's QA prompt, and its abstention)."""

DEFAULT_BUDGET = 2048
"""Prompt tokens every method may use per probe unless ``--budget`` says otherwise."""


@dataclass(frozen=True, slots=True)
class MethodSettings:
    """Settings of every method (one value per dataset; see :mod:`copage.eval.methods`).

    Every method fills its calls, at most ``budget`` tokens together, by its own rule
    (``docs/benchmark-methods.md``); the caps below are off (None) by default so
    that the budget alone decides.

    Attributes:
        budget: prompt tokens per probe, counted by one offline tokenizer over each
            whole request (instruction, tool schema, conversation text, question,
            tool calls and results) and summed over every call of the probe.
        full_window: optional cap on the turns of ``full_context`` (the paper: 60).
        window: recent turns kept by ``truncation`` and the retrieval baselines (20).
        top_k: optional cap on the units added by ``bm25``/``word_overlap`` and
            returned by ``memory_search`` (the paper: 3).
        boundary: how units (retrieval candidates, pages) are cut: ``session`` or
            any boundary name of ``copage simulate``.
        recall_reserve: tokens the bookmark methods keep free for one recalled page
            (None: the largest page of the conversation, so one recall always fits).
        resident_pages: the bookmark methods keep this many closed pages resident
            instead of filling the budget (the paper's controlled setting: 2 pages of
            5 turns, early pages evicted to bookmarks); None: the budget decides.
        policy, keywords, format: the bookmark methods' paging settings.
        copage_policy, copage_boundary, copage_keywords: override the library
            default (``PagerConfig()``) of ``bookmark_recall+copage``; None: the default.
        max_recalls: tool calls served per probe (recall or memory_search).
        speculative_threshold: the speculative fill's threshold (the best page's
            normalised score; :class:`~copage.session.Speculator`).
        speculative_window: speculative variants keep this share of the resident
            room for resident pages (the recent window); the rest is the fill's
            allowance (``docs/benchmark-methods.md``).
        speculative_relative: a page of the fill after the first needs this share
            of the best page's score.
        plan_recall: the bookmark methods with the recall tool plan their budget for
            one recall round trip (the answer call after it, and the recalled page);
            False: for one answer call, so a probe whose recall exceeds the budget
            does not fit.
        temperature, max_tokens: every answering call.
        prompt_style: the bookmark methods' prompt style (``paper``: the paper's
            preamble, bookmarks and schema; ``compact``: :class:`PagedChat`'s style for
            small models); the other methods have one prompt.
    """

    budget: int = DEFAULT_BUDGET
    full_window: int | None = None
    window: int = 20
    top_k: int | None = None
    boundary: str = "fixed_10"
    recall_reserve: int | None = None
    resident_pages: int | None = None
    policy: str = "lru"
    keywords: str = "heuristic"
    format: str = "minimal"
    copage_policy: str | None = None
    copage_boundary: str | None = None
    copage_keywords: str | None = None
    max_recalls: int = 3
    speculative_threshold: float = DEFAULT_THRESHOLD
    speculative_window: float = 0.25
    speculative_relative: float = 0.0
    plan_recall: bool = True
    temperature: float | None = 0.0
    max_tokens: int | None = 200
    prompt_style: str = "paper"

    def __post_init__(self) -> None:
        if self.prompt_style not in PROMPT_STYLES:
            raise ValueError(f"unknown prompt style {self.prompt_style!r}; valid: "
                             f"{', '.join(PROMPT_STYLES)}")
        for name in ("budget", "full_window", "window", "top_k", "max_recalls", "resident_pages"):
            value = getattr(self, name)
            if value is None and name in ("full_window", "top_k", "resident_pages"):
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"method setting {name} must be an int >= 1, got {value!r}")
        for name in ("speculative_window", "speculative_relative"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ValueError(f"method setting {name} must be a number from 0 to 1, "
                                 f"got {value!r}")
        if self.recall_reserve is not None and (
                not isinstance(self.recall_reserve, int) or self.recall_reserve < 0):
            raise ValueError(f"method setting recall_reserve must be an int >= 0 or None, "
                             f"got {self.recall_reserve!r}")


@dataclass(frozen=True, slots=True)
class MethodPrompt:
    """The LLM-free view of one probe: the prompt and what it covers.

    Attributes:
        messages, tools: the request (OpenAI format) the model would get.
        context_turn_ids: ids of the conversation turns visible in it.
        prompt_tokens: its token count (one offline tokenizer).
        needed: pages (or units) holding the probe's evidence.
        evicted_needed: needed pages that were not in the first prompt.
        routed: what the reference reader fetched (a page, or units), if anything.
        routing: routing credit of the bookmarks (``copage.eval.routing``) when a
            needed page is evicted; measured after the reader decided, never used by it.
        limit: why the prompt is well below the budget when it is (the method's rule
            stopped it), e.g. ``"whole conversation fits"``; :data:`DOES_NOT_FIT` when
            the probe cannot be asked within the budget (no call is made: a miss);
            None otherwise.
        calls: the prompt tokens of each call the probe makes, in order (first call,
            recall round trips, choose call, answer call); ``prompt_tokens`` is their
            sum, what a provider bills for the probe.
        parts: billed tokens of ``prompt_tokens`` by part (:data:`PARTS`), summed
            over the calls; what the part counts cannot place is in ``other``.
        trigger: the offline trigger rule of a bookmark method's reader
            (:data:`copage.eval.methods.readers.TRIGGERS`), None for other methods.
        would_need: when a call the probe wanted was not made because it would take
            the probe over the budget, the tokens the whole probe would have billed
            with it (``prompt_tokens`` is what was billed: the calls made before it);
            None otherwise.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    context_turn_ids: frozenset[str]
    prompt_tokens: int
    needed: tuple[str, ...] = ()
    evicted_needed: tuple[str, ...] = ()
    routed: str | None = None
    routing: float | None = None
    limit: str | None = None
    calls: tuple[int, ...] = ()
    parts: Mapping[str, int] = field(default_factory=dict)
    trigger: str | None = None
    would_need: int | None = None


DOES_NOT_FIT = "does not fit: the probe cannot be asked within the budget (counted as a miss)"

PARTS: tuple[str, ...] = ("preamble", "tool_schema", "bookmarks", "recent_turns", "paged_in",
                          "question", "tool_calls", "other")
"""The parts of a billed prompt: ``preamble`` (instruction and any tool/recall hint),
``tool_schema`` (the JSON schema of an offered tool), ``bookmarks`` (the bookmark
index, and the choose call's page list), ``recent_turns`` (the conversation shown as
messages before anything is fetched: a window, or the resident pages), ``paged_in``
(what was fetched for the probe: retrieved units, a search result, a recalled,
chosen or speculatively paged-in page), ``question``, ``tool_calls`` (the arguments
of the model's tool calls), ``other`` (joins the part counts cannot place)."""


def does_not_fit(needed: tuple[str, ...], evicted: tuple[str, ...], trigger: str | None = None,
                 *, billed: tuple[int, ...] = (), parts: Mapping[str, int] | None = None,
                 would_need: int | None = None) -> MethodPrompt:
    """The prompt of a probe that cannot be answered within the budget: a miss.

    ``billed``: the calls already sent before the one that would go over the budget
    (a provider bills them: a model run's :class:`~copage.eval.methods.recorder.Recorder`
    sends them and refuses only the next), with their ``parts``; ``would_need``: what
    the whole probe would have billed. Nothing sent when ``billed`` is empty.
    """
    return MethodPrompt([], [], frozenset(), sum(billed), needed, evicted, None, None,
                        DOES_NOT_FIT, tuple(billed), dict(parts or {}), trigger, would_need)


def add_parts(*parts: Mapping[str, int]) -> dict[str, int]:
    """Part counts summed (calls of one probe)."""
    out: dict[str, int] = {}
    for p in parts:
        for k, v in p.items():
            out[k] = out.get(k, 0) + v
    return out


def call_parts(total: int, counts: Mapping[str, int]) -> dict[str, int]:
    """``counts`` (part -> tokens of one call) with ``other`` = ``total`` less their sum, so
    the parts add up to the call's exact count."""
    out = {k: v for k, v in counts.items() if v}
    rest = total - sum(out.values())
    if rest:
        out["other"] = out.get("other", 0) + rest
    return out


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One model call made for a probe."""

    prompt_tokens: int
    provider_prompt_tokens: int
    completion_tokens: int
    tool_calls: tuple[dict[str, str], ...] = ()
    cached: bool = False
    cost_usd: float | None = None
    refused: bool = False  # not sent: it would have taken the probe over the budget
    parts: Mapping[str, int] = field(default_factory=dict)  # prompt_tokens by part (PARTS)


@dataclass(frozen=True, slots=True)
class RecallInfo:
    """One tool call answered for a probe (recall or memory_search)."""

    tool: str
    arguments: str
    status: str
    page: PageId | None = None
    pages: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class MethodAnswer:
    """What a model answered for one probe, with every call and tool call."""

    answer: str
    calls: tuple[CallRecord, ...]
    needed: tuple[str, ...] = ()
    evicted_needed: tuple[str, ...] = ()
    recalls: tuple[RecallInfo, ...] = ()
    speculative: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def prompt_tokens(self) -> int:
        """Offline prompt tokens summed over every call (what the user pays)."""
        return sum(c.prompt_tokens for c in self.calls if not c.refused)

    @property
    def parts(self) -> dict[str, int]:
        """Billed prompt tokens by part (:data:`PARTS`), summed over the calls sent."""
        return add_parts(*(c.parts for c in self.calls if not c.refused))

    @property
    def does_not_fit(self) -> bool:
        """True when a call was refused because it would take the probe over the budget."""
        return any(c.refused for c in self.calls)


class PreparedConversation(Protocol):
    """One conversation prepared for one method."""

    @property
    def conversation(self) -> Conversation: ...

    def build(self, probe: Probe) -> MethodPrompt:
        """The LLM-free prompt of ``probe`` (no state is changed)."""
        ...

    async def answer(self, probe: Probe, model: ChatModel) -> MethodAnswer:
        """Ask ``model``; probes are independent (state is restored afterwards)."""
        ...


class Method(Protocol):
    """A named way of giving a model the conversation."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def uses_bookmarks(self) -> bool:
        """True for the bookmark methods (recall metrics apply)."""
        ...

    def prepare(self, conversation: Conversation, settings: MethodSettings) -> PreparedConversation:
        """Prepare ``conversation`` (its turns are all added; probes come after them)."""
        ...


def message_tokens(messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]],
                   tokenizer: Tokenizer) -> int:
    """Content tokens of a request: message texts, tool-call arguments, the tool schema."""
    n = 0
    for m in messages:
        n += tokenizer.count(text_of(m.get("content")))
        for call in m.get("tool_calls") or ():
            fn = call.get("function", {}) if isinstance(call, Mapping) else {}
            n += tokenizer.count(str(fn.get("name", "")) + str(fn.get("arguments", "")))
    if tools:
        n += tokenizer.count(json.dumps(list(tools), separators=(",", ":"), sort_keys=True))
    return n


def request_tokens(request: ChatRequest, tokenizer: Tokenizer) -> int:
    """:func:`message_tokens` of a :class:`ChatRequest`."""
    return message_tokens(request.messages, request.tools, tokenizer)


def request_parts(request: ChatRequest, tokenizer: Tokenizer,
                  bookmark_lines: Collection[str] = ()) -> dict[str, int]:
    """The billed parts (:data:`PARTS`) of one model call, read from its request: system
    text is ``preamble`` but for its lines in ``bookmark_lines`` (``bookmarks``), tool
    results ``paged_in``, the model's tool calls ``tool_calls``, the last user message
    ``question``, other messages ``recent_turns`` (pages paged in as turns count here),
    the tool schema ``tool_schema``; the rest ``other`` (the parts add up to
    :func:`request_tokens`)."""
    count = tokenizer.count
    marks = {line.strip() for line in bookmark_lines if line.strip()}
    out: dict[str, int] = {}

    def add(part: str, n: int) -> None:
        out[part] = out.get(part, 0) + n

    messages = request.messages
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    for i, m in enumerate(messages):
        role, content = m.get("role"), text_of(m.get("content"))
        if role == "system":
            books = [line for line in content.splitlines() if line.strip() in marks]
            n_books = count("\n".join(books)) if books else 0
            add("bookmarks", n_books)
            add("preamble", max(0, count(content) - n_books))
        elif role == "tool":
            add("paged_in", count(content))
        elif m.get("tool_calls"):
            add("tool_calls", message_tokens([m], [], tokenizer))
        elif i == last_user:
            add("question", count(content))
        else:
            add("recent_turns", count(content))
    add("tool_schema", message_tokens([], request.tools, tokenizer))
    return call_parts(request_tokens(request, tokenizer), out)


def question_message(probe: Probe) -> dict[str, Any]:
    """The probe as the final user message (every method asks it the same way)."""
    return {"role": "user", "content": probe.question}
