"""The session tests' fake of OpenAI's /chat/completions: a thin use of the shipped one.

Scripted (status, body, delay) answers on :class:`copage.llm.fake_server.FakeServer`;
``fake.requests`` are the JSON bodies received, ``fake.url`` the ``/v1`` base URL.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from copage.llm.fake_server import FakeReply, FakeServer, completion

__all__ = ["FakeOpenAI", "completion", "serve"]


class FakeOpenAI:
    """Answers each POST with the next scripted (status, body, delay)."""

    def __init__(self, server: FakeServer) -> None:
        self.server = server
        self.url = server.url

    def add(self, status: int, body: dict[str, Any], delay: float = 0.0) -> FakeOpenAI:
        self.server.add(FakeReply(body, status=status, delay=delay))
        return self

    @property
    def requests(self) -> list[Any]:
        return self.server.received


@contextmanager
def serve() -> Iterator[FakeOpenAI]:
    """Run a fake server on a free loopback port (500 once the script is empty)."""
    empty = FakeReply({"error": {"message": "script empty"}}, status=500)
    with FakeServer(default=empty) as server:
        yield FakeOpenAI(server)
