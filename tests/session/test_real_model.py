"""End to end with a real model: SmolLM2-135M behind llama.cpp's ``llama-server``.

What the model is shown is asserted from the server itself: a recording proxy
captures the exact request bodies copage sends, and the server's
``/apply-template`` renders each into the prompt the model reads (its token count
is checked against the server's own ``usage.prompt_tokens`` for that call). The
page texts hold ``<``, ``>``, ``&`` and ``"`` so that an HTML-escaping template,
a dropped tool result or a prompt without tools fails. Answer quality is never
asserted: the model is tiny.
"""

from __future__ import annotations

import json

import pytest
from realmodel import (
    LlamaServer,
    RecordingProxy,
    assert_verbatim,
    force_tool_call,
    forced_choice,
    shown_tools,
    tool_responses,
)

from copage.llm import ChatRequest, get_model
from copage.memory import PagedMemory
from copage.session import PagedChat

pytestmark = [pytest.mark.realmodel, pytest.mark.slow]

TURNS = [
    'I am allergic to peanuts & <shellfish>; my card says "severe".', "Noted.",
    'My budget is <900> dollars & "firm".', "OK.",
    "I like hiking in the Alps.", "Nice.",
    "My sister is Maria <maria@example.org>.", "Good.",
]
QUESTION = "What am I allergic to?"


def memory() -> PagedMemory:
    mem = PagedMemory(store="memory://", boundary="fixed_2", resident_pages=2)
    for i, text in enumerate(TURNS):
        mem.add("user" if i % 2 == 0 else "assistant", text)
    assert mem.evicted == ["p1", "p2"]
    return mem


def page_texts(page: str) -> list[str]:
    """The turn texts of ``page`` (fixed_2: p1 holds turns 1-2, p2 turns 3-4, ...)."""
    n = int(page[1:])
    return TURNS[2 * (n - 1): 2 * n]


async def test_tools_and_recalled_page_reach_the_model_unescaped(
    real_server: LlamaServer,
) -> None:
    """No force_recall: the recall tool is shown as sent, and a page it returns is shown as is.

    SmolLM2-135M never calls a tool on its own, so the proxy makes the server's
    FIRST reply a call of ``recall`` (grammar-constrained, see ``force_tool_call``);
    what copage sent, and what is asserted about the prompts, is unchanged.
    """
    mem = memory()
    first_only = lambda n, body: force_tool_call(body, "recall") if n == 0 else body
    with RecordingProxy(real_server.base_url, rewrite=first_only) as proxy:
        model = get_model(f"openai:smollm2@{proxy.base_url}")
        chat = PagedChat(mem, model, max_tokens=48, enum_pages=True, max_recalls_per_turn=1, recall_mode="tool")
        report = await chat.send(QUESTION)
    chats = proxy.chats
    first = chats[0]

    # 1. The request copage sent without force_recall: tools offered, nothing forced.
    assert first.body.get("tool_choice", "auto") == "auto"
    prompt = real_server.evaluated(first.forwarded, first.reply)
    sent_prompt = real_server.apply_template(first.body)
    assert prompt.startswith(sent_prompt.removesuffix("<|im_start|>assistant\n"))
    assert shown_tools(sent_prompt) == first.body["tools"]
    assert first.body["tools"][0]["function"]["name"] == "recall"
    assert_verbatim(first.body, sent_prompt)
    assert "<maria@example.org>" in sent_prompt  # a resident page, unescaped

    # 2. The server's reply was a recall; copage paged the page in.
    assert len(chats) >= 2, f"no recall: {first.reply}"
    second = chats[1]
    call = first.reply["choices"][0]["message"]["tool_calls"][0]["function"]
    assert call["name"] == "recall"
    page = json.loads(call["arguments"])["page"]
    assert page in ("p1", "p2")
    rec = report.recalls[0]
    assert (rec.status, rec.page) == ("paged_in", page)

    # 3. The next request holds the tool result, and the model is shown it verbatim.
    tool_msgs = [m for m in second.body["messages"] if m["role"] == "tool"]
    assert len(tool_msgs) == 1 and all(t in tool_msgs[0]["content"] for t in page_texts(page))
    prompt = real_server.evaluated(second.body, second.reply)
    assert_verbatim(second.body, prompt)
    assert tool_responses(prompt) == [tool_msgs[0]["content"]]
    assert f'<page id="{page}">' in prompt
    assert f'"name": "recall", "arguments": {{"page": "{page}"}}' in prompt  # the call itself


async def test_text_protocol_instructions_reach_the_model_unescaped(
    real_server: LlamaServer,
) -> None:
    """``#text``: the tool instructions in the system prompt are shown exactly as sent."""
    with RecordingProxy(real_server.base_url) as proxy:
        model = get_model(f"openai:smollm2@{proxy.base_url}#text")
        chat = PagedChat(memory(), model, max_tokens=24, max_recalls_per_turn=1, recall_mode="tool")
        await chat.send(QUESTION)
    first = proxy.chats[0]
    assert "tools" not in first.body
    system = first.body["messages"][0]["content"]
    assert "recall" in system and "<" in system and '"' in system
    prompt = real_server.evaluated(first.body, first.reply)
    assert_verbatim(first.body, prompt)
    assert shown_tools(prompt) == []  # tools travel as text in this mode


async def test_recalled_page_is_in_the_next_prompt(real_server: LlamaServer) -> None:
    """force_recall: the model's chosen page is in the prompt of the turn's next call."""
    mem = memory()
    # llama-server ignores OpenAI's named tool_choice; the proxy translates it.
    with RecordingProxy(real_server.base_url, rewrite=lambda n, b: forced_choice(b)) as proxy:
        model = get_model(f"openai:smollm2@{proxy.base_url}")
        # enum_pages: the server's grammar then only allows "p1" or "p2" as the argument.
        chat = PagedChat(mem, model, max_tokens=48, enum_pages=True, max_recalls_per_turn=1, recall_mode="tool")
        report = await chat.send(QUESTION, force_recall=True)
    chats = proxy.chats
    assert len(chats) >= 2, f"no recall: {chats[0].reply}"
    assert chats[0].forwarded is not chats[0].body, "copage did not force the first call"
    assert all(c.forwarded is c.body for c in chats[1:]), "copage forced a later call"

    first = report.recalls[0]
    assert first.status == "paged_in" and first.page in ("p1", "p2")
    before = real_server.apply_template(chats[0].body)
    after = real_server.evaluated(chats[1].body, chats[1].reply)
    for text in page_texts(first.page):
        assert text not in before  # evicted when the turn started ...
        assert text in after  # ... and in the very next prompt, as written
    assert [r for r in tool_responses(after) if f'<page id="{first.page}">' in r]

    # Bookkeeping. LRU, k=2: the recalled page evicted p3; the answer closed p5, evicting p4.
    assert report.model_calls == len(chats) >= 2
    assert list(report.prompt_tokens) == [c.reply["usage"]["prompt_tokens"] for c in chats]
    assert first.evicted == ("p3",)
    assert mem.resident == sorted([first.page, "p5"])
    events = [e for e in mem.store.events(mem.conversation_id) if e.kind == "recall"]
    assert events and events[-1].detail.get("status") == "paged_in"
    assert report.answer.strip()
    assert mem.turns[-1].role == "assistant" and mem.turns[-1].text == report.answer
    assert all(t.role in ("user", "assistant") for t in mem.turns)


async def test_logprobs(real_server: LlamaServer) -> None:
    """One log-probability per generated token, through the OpenAI endpoint."""
    model = get_model(real_server.spec)
    request = ChatRequest(
        messages=({"role": "user", "content": "Say hello."},), max_tokens=8, temperature=0,
        logprobs=True,
    )
    response = await model.complete(request)
    assert response.text
    assert response.logprobs is not None
    assert len(response.logprobs) == response.usage.completion_tokens > 0
    assert all(lp <= 0.0 for lp in response.logprobs)
    assert any(lp < 0.0 for lp in response.logprobs)  # real probabilities, not a placeholder


async def test_a_chat_longer_than_the_models_window_is_paged_down_at_the_defaults(
    real_server: LlamaServer,
) -> None:
    """PagedChat at its defaults (a 48,000-token budget: nothing paged) with a chat of
    about 9,000 of SmolLM2's tokens: llama-server refuses it for its 4,096-token window,
    copage pages the conversation down and asks again, and the turn is answered."""
    mem = PagedMemory(store="memory://")
    mem.add("user", "My sister Ana moved to Porto last spring.")
    mem.add("assistant", "Noted.")
    for i in range(300):
        mem.add("user" if i % 2 == 0 else "assistant",
                f"Small talk {i}: the weather was fine, the trains were late, item {i * 7}.")
    assert not mem.evicted
    with RecordingProxy(real_server.base_url) as rec:
        model = get_model(f"openai:smollm2@{rec.base_url}", max_retries=0)
        # the paging defaults; the answer capped at 48 tokens like the other tests here:
        # uncapped, SmolLM2 can ramble until its window is full, about 60 s on 2 cores,
        # the length of the call timeout (seen to fail CI that way)
        chat = PagedChat(mem, model, max_tokens=48)
        report = await chat.send("Where does my sibling live these days?")
    assert report.answer.strip() and mem.evicted
    chats = rec.chats
    assert [e.status for e in chats] == [400, 200]  # refused for its length, then answered
    assert "exceeds the available context size" in json.dumps(chats[0].reply)
