"""What one proxy turn yields: :class:`Opened`, the answer's deltas, :class:`Finished`.

:meth:`copage.server.service.ProxyService.turn` yields these events; the wire
formats (:mod:`copage.server.formats`) render them, streamed or whole, and
:mod:`copage.server.streaming` sends them as server-sent events. They live here,
apart from the service, so that rendering a turn needs no import of the service
that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from copage.server.proxy_loop import Outcome
from copage.session.engine import ClientToolDelta, RecallServed, TextDelta

__all__ = ["Finished", "Opened", "TurnEvent", "TurnResult"]


@dataclass(slots=True)
class TurnResult:
    """The answer, its conversation and the ``X-Copage-Stats`` values."""

    conversation_id: str
    outcome: Outcome
    stats: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Opened:
    """The turn's conversation is locked and its new messages added (first event).

    Attributes:
        conversation_id: the conversation (a branch's new id for a regenerate).
        model: the model name answering (the stored one for a replay).
        replayed: a retry answered from the store, without an upstream call.
        point: the transcript chain through the turn's request: it names the answer
            this turn stores (a Responses API response id is made from it).
    """

    conversation_id: str
    model: str
    replayed: bool
    point: str = ""


@dataclass(frozen=True, slots=True)
class Finished:
    """The turn is committed and acknowledged (last event)."""

    result: TurnResult


TurnEvent = Opened | TextDelta | ClientToolDelta | RecallServed | Finished
"""What :meth:`copage.server.service.ProxyService.turn` yields."""
