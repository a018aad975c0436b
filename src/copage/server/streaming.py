"""Sending a turn to the client as server-sent events while it runs.

The turn's events (:meth:`copage.server.service.ProxyService.turn`) are produced
by their own task (:class:`TurnStream`) into a queue, and the response sends them
as they come. The producer never waits for the client: the turn is committed as
soon as the upstream's answer is complete, whatever the client's reading speed,
and the conversation's lock is released then. The queue holds at most one
answer's deltas.

Before the first byte is sent, the handler reads the turn up to its first
visible event (:meth:`TurnStream.head`): a failure until then (a busy
conversation, a rejected request, an upstream error before the first token) is an
ordinary HTTP error with its status. Later failures are sent as one SSE event
in the wire format's error shape, and the stream ends without ``data: [DONE]``.

A client that goes away is noticed by a task waiting on the ASGI ``receive``
channel (``http.disconnect``), whether or not anything is being sent: the
producer is cancelled, which cancels the upstream call and rolls the turn back
(nothing of it is stored), unless its commit had begun (then it completes, and a
retry gets the stored answer).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any, Protocol

from starlette.responses import Response

from copage.server.error_body import ProxyError
from copage.server.events import Finished, Opened, TurnEvent, TurnResult
from copage.server.metrics import Metrics
from copage.server.proxy_loop import closing
from copage.session.engine import ClientToolDelta, TextDelta

log = logging.getLogger("copage.server")
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class Renderer(Protocol):
    """Makes a wire format's SSE text of a turn's events (one per format in
    :mod:`copage.server.formats`)."""

    def event(self, event: object) -> list[str]: ...

    def end(self, result: TurnResult) -> list[str]: ...


ErrorEvent = Callable[[ProxyError, Callable[[str], str]], str]


class ClientGone(Exception):
    """The client disconnected before the turn ended."""


class _End:
    pass


_END = _End()


class TurnStream:
    """A turn run by its own task; its events read with :meth:`next`.

    Args:
        events: the turn's events (closed, and so rolled back, if cancelled early).
        receive: the request's ASGI ``receive`` (its body already read): a
            ``http.disconnect`` on it cancels the turn.
    """

    def __init__(self, events: AsyncIterator[TurnEvent], receive: Receive) -> None:
        self.queue: asyncio.Queue[TurnEvent | BaseException | _End] = asyncio.Queue()
        self.finished = False  # a Finished event was read: the turn is committed
        self.task = asyncio.create_task(self._produce(events))
        self.watch = asyncio.create_task(self._watch(receive))

    async def _produce(self, events: AsyncIterator[TurnEvent]) -> None:
        try:
            async with closing(events):
                async for event in events:
                    self.queue.put_nowait(event)
        except Exception as e:  # noqa: BLE001 - handed to the reader, which reports it
            self.queue.put_nowait(e)
        else:
            self.queue.put_nowait(_END)

    async def _watch(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message.get("type") == "http.disconnect":
                self.task.cancel()
                self.queue.put_nowait(ClientGone())
                return

    async def next(self) -> TurnEvent | None:
        """The next event (None after the last); the turn's error is raised here."""
        item = await self.queue.get()
        if isinstance(item, _End):
            return None
        if isinstance(item, BaseException):
            raise item
        self.finished = self.finished or isinstance(item, Finished)
        return item

    async def head(self) -> tuple[Opened | None, list[TurnEvent]]:
        """The events up to the first one the client sees (or the end), and the
        :class:`Opened` among them. Raises the turn's error, or :class:`ClientGone`."""
        opened: Opened | None = None
        seen: list[TurnEvent] = []
        while True:
            event = await self.next()
            if event is None:
                return opened, seen
            seen.append(event)
            if isinstance(event, Opened):
                opened = event
            if isinstance(event, (TextDelta, ClientToolDelta, Finished)):
                return opened, seen

    async def close(self) -> None:
        """Stop watching; cancel the turn unless it was committed, and wait for its end
        (a cancelled turn's rollback)."""
        self.watch.cancel()
        if not self.finished:
            self.task.cancel()
        await asyncio.wait([self.task, self.watch])


class EventStreamResponse(Response):
    """The ``text/event-stream`` response of a :class:`TurnStream` (see module docstring).

    Args:
        stream: the running turn (its :meth:`TurnStream.head` already read).
        head: the events read so far.
        chunks: makes the SSE text of each event.
        error_of: maps a failure to the error sent in the stream.
        error_event: the SSE text of that error (the wire format's shape).
        clean: redacts secrets from error messages.
        metrics: counts streams that failed or lost their client.
    """

    media_type = "text/event-stream"

    def __init__(self, stream: TurnStream, head: list[TurnEvent], chunks: Renderer,
                 *, error_of: Callable[[Exception], ProxyError], clean: Callable[[str], str],
                 metrics: Metrics, headers: dict[str, str], error_event: ErrorEvent) -> None:
        self.stream, self.head, self.chunks = stream, head, chunks
        self.error_event = error_event
        self.error_of, self.clean, self.metrics = error_of, clean, metrics
        self.status_code = 200
        self.background = None
        self.init_headers({**headers, "cache-control": "no-cache", "x-accel-buffering": "no"})

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await send({"type": "http.response.start", "status": self.status_code,
                        "headers": self.raw_headers})
            ok = await self._body(send, self.head)
            while ok:
                try:
                    event = await self.stream.next()
                except ClientGone:
                    self.metrics.inc("copage_stream_disconnects_total")
                    return
                except Exception as e:  # noqa: BLE001 - the turn failed: tell the client
                    error = self.error_of(e)
                    self.metrics.inc("copage_stream_errors_total", code=str(error.code))
                    await send({"type": "http.response.body",
                                "body": self.error_event(error, self.clean).encode(),
                                "more_body": True})
                    break
                if event is None:
                    break
                ok = await self._body(send, [event])
            self.stream.watch.cancel()
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await self.stream.close()

    async def _body(self, send: Send, events: list[TurnEvent]) -> bool:
        """Send the events' chunks; False after the last (the turn is committed)."""
        for event in events:
            parts = (self.chunks.end(event.result) if isinstance(event, Finished)
                     else self.chunks.event(event))
            if parts:
                await send({"type": "http.response.body", "body": "".join(parts).encode(),
                            "more_body": True})
            if isinstance(event, Finished):
                return False
        return True
