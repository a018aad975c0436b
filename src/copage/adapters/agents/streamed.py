"""``CopageSession.run_streamed``: ``Runner.run_streamed`` run again, paged down, when the
model refuses the request for its context window (:mod:`copage.session.overflow`).

The SDK raises a streamed run's error from ``stream_events()`` once its events are
drained, so the retry happens there: the session pages the conversation down to about
half the window and a new streamed run starts, whose events follow the refused run's
(one ``agent_updated_stream_event`` more; a refused model call streams no text).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

from agents import Runner
from agents.items import TResponseInputItem
from agents.result import RunResultStreaming
from agents.stream_events import StreamEvent

from copage.llm.errors import note_overflow
from copage.session.overflow import REFITS

__all__ = ["PagedStream", "RefitSession"]


class RefitSession(Protocol):
    """What a streamed run needs of its session (``CopageSession`` has it)."""

    stored_batches: int

    async def page_down(self, error: BaseException) -> bool: ...

    def input_again(self, given: str | list[TResponseInputItem],
                    before: int) -> str | list[TResponseInputItem]: ...


class PagedStream:
    """What :meth:`CopageSession.run_streamed` returns: iterate :meth:`stream_events` as a
    ``RunResultStreaming``'s; every other attribute is the current attempt's run
    (:attr:`result`), so ``final_output``, ``new_items``, ``cancel()``... read as the
    SDK's once the events are consumed.

    Args:
        session: the session the run stores into and pages down.
        agent, input, kwargs: as for ``Runner.run_streamed`` (``session`` is given).
    """

    def __init__(self, session: RefitSession, agent: Any,
                 input: str | list[TResponseInputItem], kwargs: dict[str, Any]) -> None:
        self._session, self._agent, self._kwargs = session, agent, kwargs
        self._input, self._before = input, session.stored_batches
        #: The streamed run of the current attempt (the SDK's object).
        self.result: RunResultStreaming = Runner.run_streamed(
            agent, input, session=session, **kwargs)  # type: ignore[arg-type]
        #: Runs started: 1, or more after refusals (at most ``REFITS + 1``).
        self.attempts = 1

    async def stream_events(self) -> AsyncIterator[StreamEvent]:
        """The run's events; after a refusal for the window, the next attempt's."""
        while True:
            try:
                async for event in self.result.stream_events():
                    yield event
                return
            except Exception as e:
                if self.attempts > REFITS or not await self._session.page_down(e):
                    note_overflow(e)  # the SDK's own error, with what to do about it
                    raise
            self._input = self._session.input_again(self._input, self._before)
            self.result = Runner.run_streamed(self._agent, self._input,
                                              session=self._session,  # type: ignore[arg-type]
                                              **self._kwargs)
            self.attempts += 1

    def __getattr__(self, name: str) -> Any:
        return getattr(self.result, name)
