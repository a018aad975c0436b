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
