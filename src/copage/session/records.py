"""What one turn (or one probe) of the cooperative loop did: frozen records."""

from __future__ import annotations

from dataclasses import dataclass, field

from copage.core.types import PageId
from copage.llm.model_types import ChatResponse

#: Status of a recall call: the pager's ``paged_in`` / ``resident`` / ``error``;
#: ``refused`` when the per-turn cap was already reached or recall was not offered
#: (the call was not executed); ``unknown_tool`` for a call of a tool that does not
#: exist (not a recall: it does not count as a trigger).
RECALL_STATUSES = ("paged_in", "resident", "error", "refused", "unknown_tool")


@dataclass(frozen=True, slots=True)
class RecallRecord:
    """One tool call answered by the loop.

    Attributes:
        call_id: the tool call id the result answered.
        tool: the tool name the model used (may be unknown); ``choose`` for the page
            picked by the ``choose`` step of :class:`PagedChat`.
        arguments: the raw argument text (first 500 characters).
        status: ``paged_in``, ``resident``, ``error``, ``refused`` or ``unknown_tool``.
        page: the page that was paged in or was already resident, else None.
        query: the ``query`` argument, when recall by query was used.
        message: the error text sent back to the model, for errors and refusals.
        evicted: pages evicted to make room for this page-in.
    """

    call_id: str
    tool: str
    arguments: str
    status: str
    page: PageId | None = None
    query: str | None = None
    message: str | None = None
    evicted: tuple[PageId, ...] = ()

    @property
    def ok(self) -> bool:
        """True when the call named an existing page (paged in or already resident)."""
        return self.status in ("paged_in", "resident")

    @property
    def is_recall(self) -> bool:
        """True for a recall attempt (any status but ``unknown_tool``)."""
        return self.status != "unknown_tool"


@dataclass(frozen=True, slots=True)
class TurnReport:
    """The outcome of :meth:`PagedChat.send` or one probe.

    Attributes:
        answer: the final assistant text.
        recalls: every tool call answered this turn, in order.
        speculative: the pages of the speculative fill shown before the first model call
            (best first; shown for the turn only, not made resident).
        speculative_score: the normalised BM25 score of the best evicted page (None if off).
        model_calls: how many requests were sent to the model (cache hits included).
        prompt_tokens: prompt tokens of each model call, in order (provider counts; a
            reply served from the response cache counts its prompt's size too).
        completion_tokens: completion tokens summed over all calls.
        cost_usd: cost of the calls actually paid (cache hits excluded); None when no
            paid call had a known price.
        cached_calls: calls answered from the response cache (nothing paid).
        paid_prompt_tokens, paid_completion_tokens: tokens of the calls that were not
            cache hits (what the provider billed).
        saved_usd: the price the cache hits would have cost (None when unknown).
        recall_mode: the recall mode the turn ran in (``tool``, ``choose+tool`` ...).
        finish_reason: finish reason of the final reply.
        truncated: the final reply was cut at the token limit (``finish_reason == "length"``).
        capped: the recall cap was reached this turn.
        empty_retries: replies that came back empty and were asked again.
        user_turn_id: id of the stored user turn (None for a probe).
        answer_turn_id: id of the stored assistant turn (None for a probe).
        logprobs: token log-probabilities of the final reply, if asked for.
    """

    answer: str
    recalls: tuple[RecallRecord, ...] = ()
    speculative: tuple[PageId, ...] = ()
    speculative_score: float | None = None
    model_calls: int = 0
    prompt_tokens: tuple[int, ...] = ()
    completion_tokens: int = 0
    cost_usd: float | None = None
    cached_calls: int = 0
    paid_prompt_tokens: int = 0
    paid_completion_tokens: int = 0
    saved_usd: float | None = None
    recall_mode: str = "tool"
    finish_reason: str | None = None
    truncated: bool = False
    capped: bool = False
    empty_retries: int = 0
    user_turn_id: str | None = None
    answer_turn_id: str | None = None
    logprobs: tuple[float, ...] | None = None

    @property
    def total_prompt_tokens(self) -> int:
        """Prompt tokens summed over all model calls."""
        return sum(self.prompt_tokens)

    @property
    def recalled_pages(self) -> tuple[PageId, ...]:
        """Pages named by successful recall calls, in order."""
        return tuple(r.page for r in self.recalls if r.ok and r.page is not None)


@dataclass(frozen=True, slots=True)
class ProbeRecord:
    """One probe question, for the loop measures in :mod:`copage.eval.runner.probe_metrics`.

    Attributes:
        needed: pages holding the evidence the question needs.
        evicted: the needed pages that were evicted when the probe started
            (before any speculative page-in).
        speculative: pages paged in speculatively for this probe.
        recalls: the recall calls the model made, in order.
        question: the probe question.
        answer: the model's answer.
        report: the full turn report, when the probe was run by :class:`PagedChat`.
    """

    needed: tuple[PageId, ...]
    evicted: tuple[PageId, ...] = ()
    speculative: tuple[PageId, ...] = ()
    recalls: tuple[RecallRecord, ...] = ()
    question: str = ""
    answer: str = ""
    report: TurnReport | None = field(default=None, compare=False)

    @property
    def speculative_hit(self) -> bool:
        """Every evicted needed page was paged in speculatively, so no recall was needed."""
        return bool(self.evicted) and set(self.evicted) <= set(self.speculative)

    @property
    def needs_recall(self) -> bool:
        """A needed page was still evicted after speculative page-in."""
        return bool(set(self.evicted) - set(self.speculative))

    @property
    def triggered(self) -> bool:
        """The model called recall at least once (any status; calls of unknown tools do not count)."""
        return any(r.is_recall for r in self.recalls)

    @property
    def right_page(self) -> bool:
        """A recall paged in a needed page (a recall of a page already resident does not count)."""
        needed = set(self.needed)
        return any(r.status == "paged_in" and r.page in needed for r in self.recalls)


class UsageSum:
    """Accumulates usage and cost over the model calls of one turn.

    A reply served from the response cache (``ChatResponse.cached``) adds its
    prompt size to ``prompt_tokens`` and its completion to ``completion_tokens``
    (the sizes), but nothing to the paid tokens or the cost: its price goes to
    ``saved``.
    """

    def __init__(self) -> None:
        self.prompt_tokens: list[int] = []
        self.completion_tokens = 0
        self.cost: float | None = None
        self.cached = 0
        self.paid_prompt = self.paid_completion = 0
        self.saved: float | None = None

    @property
    def calls(self) -> int:
        """Model calls counted so far."""
        return len(self.prompt_tokens)

    def add(self, response: ChatResponse) -> None:
        """Count one reply."""
        self.prompt_tokens.append(response.usage.prompt_tokens)
        self.completion_tokens += response.usage.completion_tokens
        if response.cached:
            self.cached += 1
            if response.cost_usd is not None:
                self.saved = (self.saved or 0.0) + response.cost_usd
            return
        self.paid_prompt += response.usage.prompt_tokens
        self.paid_completion += response.usage.completion_tokens
        if response.cost_usd is not None:
            self.cost = (self.cost or 0.0) + response.cost_usd

