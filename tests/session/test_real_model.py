"""End to end with a real model: SmolLM2-135M behind llama.cpp's OpenAI-compatible server.

Asserts protocol and bookkeeping only, never answer quality.
"""

from __future__ import annotations

import pytest
from realmodel import LlamaServer

from copage.llm import ChatRequest, get_model
from copage.memory import PagedMemory
from copage.session import PagedChat

pytestmark = [pytest.mark.realmodel, pytest.mark.slow]

TURNS = [
    "I am allergic to peanuts.", "Noted.",
    "My budget is 900 dollars.", "OK.",
    "I like hiking in the Alps.", "Nice.",
    "My sister is Maria.", "Good.",
]


async def test_recall_round_trip(real_server: LlamaServer) -> None:
    mem = PagedMemory(store="memory://", boundary="fixed_2", resident_pages=2)
    for i, text in enumerate(TURNS):
        mem.add("user" if i % 2 == 0 else "assistant", text)
    assert mem.evicted == ["p1", "p2"]
    model = get_model(real_server.spec)
    # enum_pages: the server's grammar then only allows "p1" or "p2" as the argument.
    chat = PagedChat(mem, model, max_tokens=48, enum_pages=True, max_recalls_per_turn=1)
    report = await chat.send("What am I allergic to?", force_recall=True)

    assert report.model_calls >= 2
    first = report.recalls[0]
    assert first.status == "paged_in" and first.page in ("p1", "p2")
    # LRU, k=2: the recalled page evicted p3; the answer closed p5, which evicted p4.
    assert first.evicted == ("p3",)
    assert mem.resident == sorted([first.page, "p5"])
    events = [e for e in mem.store.events(mem.conversation_id) if e.kind == "recall"]
    assert events and events[-1].detail.get("status") in ("paged_in", "resident")
    assert report.answer.strip()
    assert mem.turns[-1].role == "assistant" and mem.turns[-1].text == report.answer
    assert all(t.role in ("user", "assistant") for t in mem.turns)
    assert all(n > 0 for n in report.prompt_tokens)


async def test_logprobs(real_server: LlamaServer) -> None:
    model = get_model(real_server.spec)
    # llama-cpp-python returns logprobs only when top_logprobs is set too.
    request = ChatRequest(
        messages=({"role": "user", "content": "Say hello."},), max_tokens=8, temperature=0,
        logprobs=True, extra={"top_logprobs": 1},
    )
    response = await model.complete(request)
    assert response.text
    assert response.logprobs and all(lp <= 0.0 for lp in response.logprobs)
