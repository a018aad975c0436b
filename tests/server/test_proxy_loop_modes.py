"""The proxy runs PagedChat's recall mode through the same session steps (speculative fill)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from copage.llm.model_types import ChatModel, ChatRequest, StreamEvent, fallback_stream
from copage.llm.scripted import ScriptedModel
from copage.memory import PagedMemory
from copage.server.proxy_loop import loop_events
from copage.server.request import ChatCall
from copage.server.settings import build_settings
from copage.session import DEFAULT_RECALL_MODE, LoopEnd, PagedChat, Speculator, parse_mode
from copage.session.modes import proxy_mode
from copage.session.speculate import FILL_HEADER

TEXTS = ["I live in Lisbon near the river.", "Nice.", "I like green tea.", "Ok.", "Hi", "Hey"]
QUESTION = "Which city do I live in, near the river?"


def memory() -> PagedMemory:
    mem = PagedMemory(boundary="fixed_2", resident_pages=1)
    for i, text in enumerate(TEXTS):
        mem.add("user" if i % 2 == 0 else "assistant", text)
    return mem


def upstream(m: ChatModel, request: ChatRequest) -> AsyncIterator[StreamEvent]:
    return fallback_stream(m, request)


async def proxy_request(mode: str) -> ChatRequest:
    mem = memory()
    mem.add("user", QUESTION)  # the proxy has stored the client's new message
    model = ScriptedModel().reply("Lisbon.")
    events = [e async for e in loop_events(mem, model, ChatCall(model="up", raw=()), upstream,
                                           max_recalls=3, mode=proxy_mode(mode),
                                           speculator=Speculator())]
    assert isinstance(events[-1], LoopEnd) and events[-1].outcome.text == "Lisbon."
    return model.requests[0]


async def chat_request(mode: str) -> ChatRequest:
    model = ScriptedModel().reply("Lisbon.")
    await PagedChat(memory(), model, recall_mode=mode).send(QUESTION)
    return model.requests[0]


@pytest.mark.parametrize("mode", ["speculative+tool", "speculative", "tool", "none"])
async def test_proxy_sends_what_pagedchat_sends(mode: str) -> None:
    proxy, chat = await proxy_request(mode), await chat_request(mode)
    assert proxy.messages == chat.messages
    assert [t["function"]["name"] for t in proxy.tools or []] == \
        [t["function"]["name"] for t in chat.tools or []]
    filled = [m for m in proxy.messages if FILL_HEADER in str(m.get("content"))]
    if parse_mode(mode).speculative:
        assert len(filled) == 1 and proxy.messages[-2] is not None
        assert proxy.messages[-2]["content"] == filled[0]["content"]
        assert '<page id="p1">' in filled[0]["content"]
    else:
        assert not filled
    assert bool(proxy.tools) == parse_mode(mode).tool


async def test_proxy_default_mode_is_pagedchats() -> None:
    s = build_settings({"model": "scripted:x"}, {})
    assert s.recall_mode == DEFAULT_RECALL_MODE
    assert proxy_mode(s.recall_mode) == PagedChat(memory(), ScriptedModel()).mode


def test_proxy_recall_mode_setting_is_checked() -> None:
    assert build_settings({"model": "scripted:x", "recall_mode": "speculative"}, {}).recall_mode \
        == "speculative"
    assert build_settings({"model": "scripted:x"},
                          {"COPAGE_RECALL_MODE": "tool"}).recall_mode == "tool"
    with pytest.raises(ValueError, match="does not run the choose step"):
        build_settings({"model": "scripted:x", "recall_mode": "choose+tool"}, {})
    with pytest.raises(ValueError, match="auto is not available in the proxy"):
        build_settings({"model": "scripted:x", "recall_mode": "auto"}, {})
    with pytest.raises(ValueError, match="unknown recall_mode"):
        build_settings({"model": "scripted:x", "recall_mode": "nope"}, {})
    with pytest.raises(ValueError, match="speculative_tokens must be >= 0"):
        build_settings({"model": "scripted:x", "speculative_tokens": -1}, {})


def test_serve_flags_reach_the_settings() -> None:
    from copage.cli.main import build_parser
    from copage.cli.serve import FLAGS

    args = build_parser().parse_args(["serve", "--model", "scripted:x", "--recall-mode",
                                      "speculative+tool", "--speculative-tokens", "256"])
    s = build_settings({k: getattr(args, k, None) for k in FLAGS}, {})
    assert (s.recall_mode, s.speculative_tokens) == ("speculative+tool", 256)
