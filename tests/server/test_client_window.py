"""A client that trims its own history (the system prompt and the last few messages, as
LangChain's ``trim_messages`` and many chat apps do) continues its one conversation in
transparent mode; a window that overlaps a stored conversation but cannot continue it
starts a new one, logged once. Before: 12 requests made 10 conversations, silently."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from proxy_helpers import Proxy

SYSTEM = {"role": "system", "content": "You are a helpful assistant."}


def _chat(proxy: Proxy, messages: list[dict[str, Any]]) -> str:
    answer = proxy.client().chat.completions.create(model="m", messages=messages)
    return str(answer.choices[0].message.content)


@pytest.mark.parametrize("store", ["memory://", "sqlite"])
@pytest.mark.parametrize("keep", [2, 4, 6])
def test_a_trimmed_window_continues_its_conversation(make_proxy: Callable[..., Proxy],
                                                     store: str, keep: int) -> None:
    proxy = make_proxy(store=store)
    history: list[dict[str, Any]] = []
    for i in range(12):
        history.append({"role": "user", "content": f"question {i} about my trip"})
        window = [SYSTEM, *history[-(keep + 1):]]  # the last messages, the new one included
        history.append({"role": "assistant", "content": _chat(proxy, window)})
    (conv,) = proxy.state.store.list_conversations(tenant="alice")
    assert conv.turns == 24, "every exchange stored once, in one conversation"


def test_a_window_that_does_not_fit_starts_a_new_conversation_logged_once(
        proxy: Proxy, caplog: pytest.LogCaptureFixture) -> None:
    history: list[dict[str, Any]] = []
    for i in range(3):
        history.append({"role": "user", "content": f"q{i}"})
        history.append({"role": "assistant", "content": _chat(proxy, [SYSTEM, *history])})
    # the last exchange kept, an earlier message edited: not this conversation's end
    edited = [SYSTEM, {"role": "assistant", "content": "something else"},
              *history[-2:], {"role": "user", "content": "q3"}]
    with caplog.at_level(logging.WARNING, logger="copage.server"):
        _chat(proxy, edited)
        edited[-1] = {"role": "user", "content": "q3 again"}
        _chat(proxy, edited)
    assert len(proxy.state.store.list_conversations(tenant="alice")) >= 2
    notes = [r for r in caplog.records if "overlap" in r.getMessage()]
    assert len(notes) == 1, [r.getMessage() for r in caplog.records]
