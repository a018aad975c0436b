"""The proxy in front of a model whose window is smaller than the paging budget (its
defaults, the official openai SDK as the client): the request the upstream refuses for
its length is paged down and sent again; the client gets its answer."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from proxy_helpers import Proxy

from copage.core.config import PagerConfig

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session"))
from test_overflow import FACT, WINDOW, model_tokens, small_window


@pytest.mark.parametrize("stream", [False, True])
def test_a_long_chat_sent_at_once_is_paged_to_the_models_window(
        make_proxy: Callable[..., Proxy], stream: bool) -> None:
    proxy = make_proxy(paging=PagerConfig(), recall_mode="speculative", store="sqlite")
    proxy.upstream.responder = small_window
    chat = [{"role": "user", "content": FACT}, {"role": "assistant", "content": "Noted."}]
    for i in range(400):
        chat.append({"role": "user" if i % 2 == 0 else "assistant",
                     "content": f"Small talk {i}: the weather, the trains and lunch {i * 3}."})
    chat.append({"role": "user", "content": "Where does my sister live?"})
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
