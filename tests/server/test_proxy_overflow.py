"""The proxy in front of a model whose window is smaller than the paging budget (its
defaults; the official openai and anthropic SDKs as the clients, in the three wire
formats): the request the upstream refuses for its length is paged down and sent again;
the client gets its answer."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from proxy_helpers import KEY_A, Proxy

from copage.core.config import PagerConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session"))
from test_overflow import FACT, WINDOW, model_tokens, small_window


@pytest.mark.parametrize("stream", [False, True])
def test_a_long_chat_sent_at_once_is_paged_to_the_models_window(
        make_proxy: Callable[..., Proxy], stream: bool) -> None:
    proxy = make_proxy(paging=PagerConfig(), recall_mode="speculative", store="sqlite")
    proxy.upstream.responder = small_window
    chat = _chat()
    client = proxy.client(default_headers={"X-Copage-Conversation": "long"})
    if stream:
        parts = client.chat.completions.create(model="m", messages=chat,  # type: ignore[arg-type]
                                               stream=True)
        answer = "".join(c.choices[0].delta.content or "" for c in parts if c.choices)
    else:
        out = client.chat.completions.create(model="m", messages=chat)  # type: ignore[arg-type]
        answer = out.choices[0].message.content or ""
    assert answer == "Ana lives in Porto."
    sizes = [model_tokens(b) for b in proxy.upstream.received]
    assert len(sizes) == 2 and sizes[0] > WINDOW >= sizes[1]
    sent = proxy.upstream.received[-1]["messages"]
    assert "Porto" in " ".join(str(m.get("content")) for m in sent)  # the fill found it
    stored = proxy.state.store.load("long", tenant="alice")
    assert len(stored.turns) == len(chat) + 1  # nothing lost, the answer stored


def _chat() -> list[dict[str, str]]:
    chat = [{"role": "user", "content": FACT}, {"role": "assistant", "content": "Noted."}]
    for i in range(400):
        chat.append({"role": "user" if i % 2 == 0 else "assistant",
                     "content": f"Small talk {i}: the weather, the trains and lunch {i * 3}."})
    chat.append({"role": "user", "content": "Where does my sister live?"})
    return chat


@pytest.mark.parametrize("wire", ["responses", "messages"])
def test_the_responses_and_messages_clients_are_paged_down_too(
        make_proxy: Callable[..., Proxy], wire: str) -> None:
    """The same refusal reached through the official SDKs' other wire formats: the
    OpenAI Responses API and Anthropic's Messages API (retries on, as users run them)."""
    import anthropic
    import openai

    proxy = make_proxy(paging=PagerConfig(), recall_mode="speculative", store="sqlite")
    proxy.upstream.responder = small_window
    chat = _chat()
    headers = {"X-Copage-Conversation": "long-" + wire}
    if wire == "responses":
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key=KEY_A, max_retries=2,
                               default_headers=headers)
        out = client.responses.create(model="m", input=chat)  # type: ignore[arg-type]
        answer = out.output_text
    else:
        c = anthropic.Anthropic(base_url=proxy.url, api_key=KEY_A, max_retries=2,
                                default_headers=headers)
        msg = c.messages.create(model="m", max_tokens=50, messages=chat)  # type: ignore[arg-type]
        answer = "".join(getattr(b, "text", "") for b in msg.content)
    assert answer == "Ana lives in Porto."
    sizes = [model_tokens(b) for b in proxy.upstream.received]
    assert len(sizes) == 2 and sizes[0] > WINDOW >= sizes[1]
    sent = " ".join(str(m.get("content")) for m in proxy.upstream.received[-1]["messages"])
    assert "Porto" in sent
    stored = proxy.state.store.load("long-" + wire, tenant="alice")
    assert len(stored.turns) == len(chat) + 1


def test_the_refused_window_is_remembered_for_the_model(make_proxy: Callable[..., Proxy]) -> None:
    """After one refusal the proxy knows the upstream model's window: the chat that grows
    on, and a new chat sent at once, are paged down before they are sent, not refused."""
    proxy = make_proxy(paging=PagerConfig(), recall_mode="speculative", store="sqlite")
    proxy.upstream.responder = small_window
    client = proxy.client(default_headers={"X-Copage-Conversation": "grows"})
    chat = _chat()
    for i in range(30):  # the client sends the whole chat each time, as SDK users do
        out = client.chat.completions.create(model="m", messages=chat)  # type: ignore[arg-type]
        chat += [{"role": "assistant", "content": out.choices[0].message.content or ""},
                 {"role": "user", "content": f"News {i}: " + "the council met about the "
                  "bridge, the tram line and the market square for an hour. " * 4}]
    sizes = [model_tokens(b) for b in proxy.upstream.received]
    assert len(sizes) == 31 and sum(n > WINDOW for n in sizes) == 1  # refused once
    stored = proxy.state.store.load("grows", tenant="alice")
    assert len(stored.turns) == len(chat) - 1  # every turn stored (the last one not sent)
    other = proxy.client(default_headers={"X-Copage-Conversation": "new"})
    out = other.chat.completions.create(model="m", messages=_chat())  # type: ignore[arg-type]
    assert out.choices[0].message.content == "Ana lives in Porto."
    assert len(proxy.upstream.received) == 32
    assert model_tokens(proxy.upstream.received[-1]) <= WINDOW  # paged before it was sent
