"""copage's hook in LiteLLM's Python SDK (``litellm.callbacks``), with OpenTelemetry traces:
``litellm.acompletion`` against copage's fake OpenAI server on loopback, in process, so the
SDK's in-memory span exporter sees the hook's spans."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

# LiteLLM fetches its price map at import unless told to use the one it ships (offline)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
litellm = pytest.importorskip("litellm")

import dense_chat

from copage.adapters.litellm import CopageHook
from copage.core.dense_rank import DenseRanker
from copage.llm.fake_server import FakeServer, Reply
from copage.session.speculate import FILL_HEADER

FACT = "My gym locker code is 4812, keep it in mind."
QUESTION = "What is my gym locker code again?"


def answer(body: dict[str, Any]) -> Reply:
    last = next(m for m in reversed(body["messages"]) if m["role"] == "user")
    if "FAIL" in last["content"]:
        return Reply(status=500, error="upstream down")
    return Reply(text="noted: " + " ".join(str(last["content"]).split()[:5]))


async def settled(hook: CopageHook, key: str, n: int) -> None:
    """Wait (bounded) for the hook's background success logging to reach ``n``."""
    for _ in range(200):
        if hook.counts[key] >= n:
            return
        await asyncio.sleep(0.025)
    raise AssertionError(f"{key} stayed at {hook.counts[key]}, expected {n}")


def use_hook(monkeypatch: pytest.MonkeyPatch, hook: CopageHook) -> None:
    """``litellm.callbacks = [hook]`` for the test, with LiteLLM's own callback lists empty:
    it copies a callback into them at the first call and keeps one per class, so a later
    test's hook would not be told of its answers."""
    monkeypatch.setattr(litellm, "callbacks", [hook])
    for name in ("input_callback", "success_callback", "failure_callback",
                 "_async_success_callback", "_async_failure_callback"):
        monkeypatch.setattr(litellm, name, [])


async def turn(up: FakeServer, history: list[dict[str, Any]], text: str, **kw: Any) -> str:
    messages = [*history, {"role": "user", "content": text}]
    r = await litellm.acompletion(model="openai/fake-model", api_base=up.url, api_key="sk-up",
                                  messages=messages, num_retries=0,
                                  metadata={"copage_conversation": "sdk-1"}, **kw)
    out = str(r.choices[0].message.content)
    history += [messages[-1], {"role": "assistant", "content": out}]
    return out


async def test_sdk_callbacks_page_store_and_trace(otel_spans: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    hook = CopageHook("memory://", boundary="fixed_4", resident_pages=2, keywords="heuristic")
    use_hook(monkeypatch, hook)
    history: list[dict[str, Any]] = []
    with FakeServer(answer) as up:
        await turn(up, history, FACT)
        for i in range(1, 12):
            await turn(up, history, f"Message {i} about trains and the weather.")
            await settled(hook, "stored", i + 1)
        with pytest.raises(litellm.exceptions.InternalServerError):
            await turn(up, list(history), "FAIL: nothing of this is stored.")
        await settled(hook, "rolled_back", 1)
        otel_spans.clear()
        sent = len(up.received)
        await turn(up, history, QUESTION)
        await settled(hook, "stored", 13)
        last = up.received[sent]["messages"]
    mem = hook.memory("sdk-1")
    assert [t.text for t in mem.turns] == [m["content"] for m in history]
    assert "p1" in mem.evicted
    assert FILL_HEADER in last[-2]["content"] and "4812" in last[-2]["content"]
    assert not any(m["content"] == FACT for m in last)
    spans = otel_spans.get_finished_spans()
    (t,) = [s for s in spans if s.name == "copage.turn"]
    assert t.attributes["copage.front_end"] == "litellm"
    assert t.attributes["copage.conversation_id"] == "sdk-1"
    assert t.attributes["copage.turn.stored"] is True
    kids = {s.name: s for s in spans if s.parent is not None
            and s.parent.span_id == t.context.span_id}
    assert {"copage.page_in", "copage.upstream"} <= set(kids)
    assert kids["copage.page_in"].attributes["copage.fill.pages"][0] == "p1"
    assert kids["copage.upstream"].attributes["gen_ai.usage.output_tokens"] == 5


@pytest.mark.parametrize("dense", [False, True])
async def test_the_dense_channel_brings_back_a_fact_asked_in_other_words(
        dense: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """``dense=``: the request's fill offers the best passage by meaning first, so the
    evicted fact reaches the model though the question shares no word with it; BM25
    alone cannot. (A client sending a long chat and the question in one request.)"""
    ranker = DenseRanker(dense_chat.ConceptVectors()) if dense else None
    hook = CopageHook("memory://", dense=ranker, **dense_chat.PAGING)
    assert hook.speculator.dense is ranker
    use_hook(monkeypatch, hook)
    history = [{"role": r, "content": t} for r, t in dense_chat.history()]
    with FakeServer(answer) as up:
        await litellm.acompletion(
            model="openai/fake-model", api_base=up.url, api_key="sk-up", num_retries=0,
            messages=[*history, {"role": "user", "content": dense_chat.QUESTION}],
            metadata={"copage_conversation": "dense"})
        await settled(hook, "stored", 1)
    (body,) = up.received
    sent = " ".join(str(m["content"]) for m in body["messages"])
    assert body["messages"][-1]["content"] == dense_chat.QUESTION
    assert (dense_chat.FACT_SHOWN in sent) is dense
    assert "p1" in hook.memory("dense").evicted


async def test_a_refused_window_is_remembered_and_the_next_request_fits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook at its defaults in front of a model whose window is smaller than the
    paging budget: LiteLLM raises the refusal (nothing stored); the hook remembers the
    window, so the same request sent again, and the turns after it, are paged down to fit
    it before they go, never refused again."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session"))
    from test_overflow import FACT as SISTER
    from test_overflow import WINDOW, model_tokens, small_window

    hook = CopageHook("memory://", dense=None)
    use_hook(monkeypatch, hook)
    history: list[dict[str, Any]] = [{"role": "user", "content": SISTER},
                                     {"role": "assistant", "content": "Noted."}]
    for i in range(200):
        history += [{"role": "user", "content": f"Small talk {i}: the weather, the trains."},
                    {"role": "assistant", "content": f"Sure, {i}."}]
    with FakeServer(small_window) as up:
        with pytest.raises(Exception, match="context size"):
            await turn(up, history, "Where does my sister live?")
        await settled(hook, "rolled_back", 1)
        assert hook.counts["stored"] == 0
        assert await turn(up, history, "Where does my sister live?") == "Ana lives in Porto."
        for i in range(10):
            assert await turn(up, history, f"News {i}: " + "the bridge and the tram. " * 20)
        await settled(hook, "stored", 11)
        sizes = [model_tokens(b) for b in up.received]
    assert len(sizes) == 12 and sum(n > WINDOW for n in sizes) == 1  # refused once
    assert "Porto" in " ".join(str(m["content"]) for m in up.received[1]["messages"])
    mem = hook.memory("sdk-1")
    assert mem.evicted and len(mem.turns) == 402 + 22
