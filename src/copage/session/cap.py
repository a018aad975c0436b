"""The one recall cap rule, driven by every front end (engine, LangChain, Agents SDK).

A turn may serve ``cap`` recall calls. The request that follows the cap still
offers the recall tool but with ``tool_choice="none"``; the one after that offers
no recall tool at all. A recall call made when recall is not allowed is refused
with a text telling the model to answer; if the reply also says something, that
text is the answer. A model that keeps calling tools for :data:`CALLS_AFTER_CAP`
requests that did not allow them ends the turn with :class:`RecallLoopError`.

:class:`RecallCap` keeps the count over a turn: :meth:`RecallCap.next_round`
says what the next request may offer, :meth:`RecallCap.verdict` what to do with
the reply, :meth:`RecallCap.serve` answers one call (served or refused).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from copage.core.types import ToolCall
from copage.llm.errors import BadResponse
from copage.memory import PagedMemory
from copage.session.records import RecallRecord
from copage.session.tools import execute, refuse

__all__ = ["CALLS_AFTER_CAP", "RecallCap", "RecallLoopError", "Round", "Verdict"]

#: Model calls allowed after the recall cap is reached: one with ``tool_choice="none"``,
#: then one without tools at all; tool calls in either are answered with an error.
CALLS_AFTER_CAP = 2


class RecallLoopError(BadResponse):
    """The model kept calling tools after the per-turn cap; the turn was rolled back."""


@dataclass(frozen=True, slots=True)
class Round:
    """What one request may offer.

    Attributes:
        capped: the cap was reached before this request (ask with ``tool_choice="none"``).
        offer: offer the recall tool in this request.
    """

    capped: bool
    offer: bool

    @property
    def allowed(self) -> bool:
        """Recall calls in this request's reply are served."""
        return self.offer and not self.capped


class Verdict(enum.Enum):
    """What to do with a reply."""

    ANSWER = "answer"  # no calls, some text: the turn ends with it
    EMPTY = "empty"  # no calls, no text
    SERVE = "serve"  # answer the calls (served or refused) and call the model again
    REFUSE_AND_ANSWER = "refuse_and_answer"  # calls not allowed beside text: refuse, end
    CLIENT = "client"  # the reply calls the caller's own tools: page in, end with them


class RecallCap:
    """The per-turn recall count and the one rule above (see module docstring).

    Args:
        cap: recall calls served per turn.
        offered: recall is offered at all this turn (False: every call is refused).
        records: the turn's records so far (extended in place).
        provider: the name used in :class:`RecallLoopError`.
    """

    def __init__(self, cap: int, *, offered: bool = True,
                 records: list[RecallRecord] | None = None, provider: str = "model") -> None:
        if cap < 0:
            raise ValueError(f"the recall cap must be >= 0, got {cap}")
        self.cap, self.offered, self.provider = cap, offered, provider
        self.records: list[RecallRecord] = records if records is not None else []
        self.after_cap = 0  # requests made since the cap (or a refusal) was reached
        self.blocked = 0  # replies that called tools while that was not allowed

    @property
    def capped(self) -> bool:
        """The turn has used its recalls."""
        return len(self.records) >= self.cap

    def next_round(self) -> Round:
        """What the next request may offer."""
        return Round(self.capped, self.offered and self.after_cap == 0)

    def verdict(self, rnd: Round, *, calls: bool, said: bool, client: bool = False) -> Verdict:
        """What to do with the reply to ``rnd``'s request.

        Args:
            rnd: the round the request was made in.
            calls: the reply holds recall calls (native or written as text) or
                calls of unknown tools.
            said: the reply holds text that is not a call.
            client: the reply calls tools of the caller's own.

        Raises:
            RecallLoopError: tools called for :data:`CALLS_AFTER_CAP` requests that
                did not allow them.
        """
        self.after_cap += rnd.capped
        if client:
            return Verdict.CLIENT
        if not calls:
            return Verdict.ANSWER if said else Verdict.EMPTY
        if rnd.allowed:
            return Verdict.SERVE
        if said:
            return Verdict.REFUSE_AND_ANSWER
        self.blocked += 1
        if self.blocked >= CALLS_AFTER_CAP:
            why = (f"after the cap of {self.cap} recalls" if rnd.capped
                   else "while recall is not offered")
            raise RecallLoopError(
                self.provider,
                f"still calling tools {why} and {CALLS_AFTER_CAP} requests that did not allow them",
            )
        self.after_cap = max(self.after_cap, 1)  # the next request offers no recall tool
        return Verdict.SERVE

    def serve(self, mem: PagedMemory, call: ToolCall, allowed: bool = True,
              tool: str | None = None) -> tuple[str, RecallRecord]:
        """Answer one call: served while allowed and under the cap, else refused."""
        if not allowed or self.capped:
            text, rec = refuse(call, self.cap, tool or mem.config.tool_name,
                               offered=self.offered)
        else:
            text, rec = execute(mem, call)
        self.records.append(rec)
        return text, rec
