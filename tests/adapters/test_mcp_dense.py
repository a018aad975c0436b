"""search_pages' meaning channel in the MCP server: a long history is embedded in the
background from append_turns on, and a search waits for it a bounded time, then answers
by words and says the search by meaning is still reading (a client's request timeout is
often 60 s; a history of thousands of turns took 22.6 s to embed here on a busy machine).

The encoder is the concept-vector test tool (the fact and the question share no word),
held back by an event the test controls; the server is the SDK's, in process.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

pytest.importorskip("mcp")

from dense_chat import PAGING, QUESTION, ConceptVectors, Gated, history
from mcp import Client
from mcp_helpers import text

from copage import PagerConfig
from copage.adapters.mcp import ConversationPool, create_server
from copage.core.dense_rank import DenseRanker


class Broken(ConceptVectors):
    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("model file unreadable")


def _args(turns: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"role": r, "content": t} for r, t in turns]


async def _append_history(c: Any) -> None:
    turns = history()
    for i in range(0, len(turns), 100):
        r = await c.call_tool("append_turns", {"conversation": "me",
                                               "turns": _args(turns[i:i + 100])})
        assert not r.is_error, text(r)


def _server(ranker: DenseRanker | None, wait: float) -> Any:
    return create_server(ConversationPool(None, PagerConfig(**PAGING)), dense=ranker,
                         dense_wait=wait)


async def test_append_starts_the_embedding_and_search_waits_a_bounded_time() -> None:
    enc = Gated()
    ranker = DenseRanker(enc)
    async with Client(_server(ranker, 0.3)) as c:
        await _append_history(c)
        # append_turns started the embedding of the evicted history: no search yet
        assert enc.started.wait(10)
        t0 = time.monotonic()
        first = text(await c.call_tool("search_pages", {"conversation": "me", "query": QUESTION}))
        waited = time.monotonic() - t0
        assert waited < 10  # bounded (0.3 s asked), not until the gate opens
        assert "still reading this conversation's 202 turns" in first
        assert "(cosine" not in first and first.startswith("No page of")  # words alone
        enc.gate.set()
        deadline = time.monotonic() + 20
        while ranker.busy and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        later = text(await c.call_tool("search_pages", {"conversation": "me", "query": QUESTION}))
        assert "[p1:" in later and "closest in meaning (cosine" in later, later
        assert "still reading" not in later


async def test_a_search_with_the_vectors_ready_finds_the_fact_by_meaning() -> None:
    async with Client(_server(DenseRanker(ConceptVectors()), 5.0)) as c:
        await _append_history(c)
        found = text(await c.call_tool("search_pages", {"conversation": "me", "query": QUESTION}))
        assert "[p1:" in found and "closest in meaning (cosine" in found and "still reading" not in found


async def test_without_the_channel_no_embedding_and_no_note() -> None:
    async with Client(_server(None, 5.0)) as c:
        await _append_history(c)
        found = text(await c.call_tool("search_pages", {"conversation": "me", "query": QUESTION}))
        assert "(cosine" not in found and "still reading" not in found


async def test_a_failing_encoder_is_logged_and_the_search_answers_by_words(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="copage.mcp")
    async with Client(_server(DenseRanker(Broken()), 5.0)) as c:
        await _append_history(c)
        r = await c.call_tool("search_pages", {"conversation": "me",
                                               "query": "drive to the coast weather"})
        assert not r.is_error, text(r)
        assert "best first" in text(r) and "still reading" not in text(r)
    assert "meaning channel failed" in caplog.text and "model file unreadable" in caplog.text


def test_a_negative_wait_is_refused() -> None:
    with pytest.raises(ValueError, match="dense_wait"):
        _server(None, -1.0)
