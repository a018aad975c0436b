"""The proxy's bounded wait for the meaning channel (copage.server.dense_warm): a
request waits at most a few seconds for its conversation's turns to be embedded; the
embedding finishes in its thread, the fill sits the channel out meanwhile, and the next
request finds the vectors. The encoder is the concept-vector test tool, slowed down by
an event the test controls."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from copage.core.dense_rank import DenseRanker
from copage.server.dense_warm import proxy_ranker, warm
from copage.session import Speculator

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session"))
from test_dense_fill import QUESTION, ConceptVectors, Gated, chat_memory, statement_shown


def test_proxy_ranker_never_waits_and_keeps_encoder_and_slots() -> None:
    enc = ConceptVectors()
    r = proxy_ranker(DenseRanker(enc, 2))
    assert r is not None and r.wait is False and r.encoder is enc and r.slots == 2
    assert proxy_ranker(r) is r and proxy_ranker(None) is None


def test_a_busy_index_gives_none_without_waiting_and_vectors_after() -> None:
    mem = chat_memory()
    enc = Gated()
    ranker = DenseRanker(enc, wait=False)
    worker = threading.Thread(target=ranker.sync, args=(mem.passages,), kwargs={"wait": True})
    worker.start()
    assert enc.started.wait(10)
    assert ranker.sync(mem.passages) is None  # being embedded: no wait
    assert ranker.top(mem.passages, QUESTION, {0}) == []
    spec = Speculator(whole=False, dense=ranker).plan(mem, QUESTION)
    assert not statement_shown(spec.text) and spec.by_meaning == ()  # BM25 only meanwhile
    enc.gate.set()
    worker.join(10)
    vectors = ranker.sync(mem.passages)
    assert vectors is not None and len(vectors) == len(mem.passages.turns)
    later = Speculator(whole=False, dense=ranker).plan(mem, QUESTION)
    assert statement_shown(later.text) and later.by_meaning == ("p1",)


class Pool:
    """A conversation, a gated encoder, a ranker that never waits, and ``run`` on a
    thread pool of two, as the proxy's service has them."""

    def __init__(self) -> None:
        self.mem, self.enc = chat_memory(), Gated()
        self.ranker = DenseRanker(self.enc, wait=False)
        self.pool = ThreadPoolExecutor(2)

    async def run(self, fn: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)


def test_warm_returns_after_its_wait_and_the_embedding_finishes_in_its_thread() -> None:
    p = Pool()
    mem, enc, ranker, pool, run = p.mem, p.enc, p.ranker, p.pool, p.run

    async def scenario() -> tuple[bool, bool]:
        first = await warm(run, ranker, mem.passages, seconds=0.2)  # the gate is shut
        enc.gate.set()
        while ranker.busy:
            await asyncio.sleep(0.01)
        second = await warm(run, ranker, mem.passages, seconds=10)  # nothing left to embed
        return first, second

    try:
        assert asyncio.run(scenario()) == (False, True)
    finally:
        pool.shutdown(wait=True)
    assert sum(n for n in enc.calls if n > 1) == len(mem.passages.turns)  # embedded once


def test_a_later_request_does_not_wait_for_an_embedding_already_running() -> None:
    p = Pool()
    mem, enc, ranker, pool, run = p.mem, p.enc, p.ranker, p.pool, p.run

    async def scenario() -> tuple[bool, bool, float]:
        first = await warm(run, ranker, mem.passages, seconds=0.2)
        loop = asyncio.get_running_loop()
        t = loop.time()
        second = await warm(run, ranker, mem.passages, seconds=30)  # busy: at once
        return first, second, loop.time() - t

    try:
        first, second, waited = asyncio.run(scenario())
        assert (first, second) == (False, False) and waited < 5
        assert ranker.busy
    finally:
        enc.gate.set()
        pool.shutdown(wait=True)
    assert ranker.sync(mem.passages, wait=True) is not None  # waits for the daemon thread
    assert not ranker.busy


def test_the_pool_is_not_held_by_the_embedding_so_shutdown_does_not_wait_for_it() -> None:
    p = Pool()
    try:
        assert asyncio.run(warm(p.run, p.ranker, p.mem.passages, seconds=0.2)) is False
        assert p.ranker.busy
        p.pool.shutdown(wait=True)  # returns while the embedding still runs (daemon thread)
        assert p.ranker.busy
    finally:
        p.enc.gate.set()
    assert p.ranker.sync(p.mem.passages, wait=True) is not None


def test_a_bounded_wait_gives_up_in_time_and_the_next_question_finds_the_vectors() -> None:
    """The library's bound (``DenseRanker(wait=seconds)``): the first question waits at
    most that long, the fill runs on BM25 alone meanwhile, a question asked while the
    embedding runs does not wait at all, and one asked after it is filled by meaning."""
    import time

    mem, enc = chat_memory(), Gated()
    ranker = DenseRanker(enc, wait=0.2)
    t = time.monotonic()
    spec = Speculator(whole=False, dense=ranker).plan(mem, QUESTION)
    assert time.monotonic() - t < 5 and enc.started.is_set()
    assert not statement_shown(spec.text) and spec.by_meaning == ()
    assert ranker.busy and ranker.sync(mem.passages, wait=30.0) is None  # busy: at once
    enc.gate.set()
    assert ranker.sync(mem.passages, wait=True) is not None
    later = Speculator(whole=False, dense=ranker).plan(mem, QUESTION)
    assert statement_shown(later.text) and later.by_meaning == ("p1",)
    assert sum(n for n in enc.calls if n > 1) == len(mem.passages.turns)  # embedded once


def test_a_bounded_wait_that_is_long_enough_answers_at_once() -> None:
    mem, enc = chat_memory(), ConceptVectors()
    ranker = DenseRanker(enc, wait=30)
    assert ranker.wait == 30.0
    spec = Speculator(whole=False, dense=ranker).plan(mem, QUESTION)
    assert statement_shown(spec.text) and spec.by_meaning == ("p1",)


class Broken(Gated):
    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) > 1:
            self.started.set()
            assert self.gate.wait(30)
            raise OSError("weights unreadable")
        return super().vectors(texts)


def test_an_error_in_the_background_reaches_the_caller_once() -> None:
    import pytest

    mem, enc = chat_memory(), Broken()
    enc.gate.set()
    with pytest.raises(OSError, match="unreadable"):  # met within the wait: raised there
        DenseRanker(enc, wait=10.0).sync(mem.passages)
    enc.gate.clear()
    ranker = DenseRanker(enc, wait=0.05)
    assert ranker.sync(mem.passages) is None  # gave up; the error comes later
    enc.gate.set()
    while ranker.busy:
        threading.Event().wait(0.01)
    with pytest.raises(OSError, match="unreadable"):
        ranker.sync(mem.passages)
    enc.gate.clear()
    assert ranker.sync(mem.passages) is None  # raised once; a new attempt gives up again
    enc.gate.set()


def test_bad_wait_values_are_refused() -> None:
    import pytest

    for bad in (-1, float("inf"), float("nan"), "10", None):
        with pytest.raises(ValueError, match="dense wait"):
            DenseRanker(ConceptVectors(), wait=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dense wait"):
        DenseRanker(ConceptVectors()).sync(chat_memory().passages, wait=-2)


def test_a_conversation_already_embedded_is_served_while_another_embeds() -> None:
    a, b = chat_memory(), chat_memory(40)
    enc = Gated()
    ranker = DenseRanker(enc, wait=False)
    enc.gate.set()
    assert ranker.sync(b.passages, wait=True) is not None
    enc.gate.clear()
    enc.started.clear()
    worker = threading.Thread(target=ranker.sync, args=(a.passages,), kwargs={"wait": True})
    worker.start()
    try:
        assert enc.started.wait(10) and ranker.busy
        assert ranker.sync(b.passages) is not None  # up to date: no embedding needed
        assert statement_shown(Speculator(whole=False, dense=ranker).plan(b, QUESTION).text)
        assert ranker.sync(a.passages) is None  # its turns wait for the running embedding
    finally:
        enc.gate.set()
        worker.join(10)


def test_the_wait_is_read_from_the_environment_and_checked() -> None:
    import pytest

    from copage.server.dense_warm import WAIT_SECONDS, wait_seconds

    assert wait_seconds({}) == WAIT_SECONDS == 10.0
    assert wait_seconds({"COPAGE_DENSE_WAIT": "2.5"}) == 2.5
    assert wait_seconds({"COPAGE_DENSE_WAIT": "0"}) == 0.0
    for bad in ("-1", "soon", "nan", "inf"):
        with pytest.raises(ValueError, match="COPAGE_DENSE_WAIT"):
            wait_seconds({"COPAGE_DENSE_WAIT": bad})


def test_serve_refuses_a_bad_wait_at_startup(tmp_path: Path, monkeypatch: Any,
                                             capsys: Any) -> None:
    from copage.cli.main import main

    monkeypatch.setenv("COPAGE_DENSE_WAIT", "soon")
    code = main(["serve", "--upstream", "http://127.0.0.1:9/v1", "--store",
                 f"sqlite://{tmp_path / 'p.db'}"])
    assert code == 2 and "COPAGE_DENSE_WAIT" in capsys.readouterr().err
