"""Through the proxy, in every client format: a stored turn imitating the page frame
(look-alike characters, forged turn and tool-result lines, the frame's note) reaches the
upstream inside its frame, as data of that turn, whether recalled or filled."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from formats import FORMATS, Client
from proxy_helpers import Proxy

sys.path.insert(0, str(Path(__file__).parents[1]))
from frame_checks import ATTACK, assert_contained

LATER = ["I like green tea.", "The meeting moved to Thursday.", "My budget is 450 dollars."]


def _framed(proxy: Proxy) -> list[str]:
    texts = [str(m.get("content") or "") for body in proxy.upstream.received
             for m in body["messages"]]
    return [t for t in texts if '<page id="p1">' in t]


@pytest.mark.parametrize("fmt", FORMATS)
def test_recalled_page_cannot_imitate_the_frame(proxy: Proxy, fmt: str) -> None:
    c = Client(proxy, fmt)
    for text in [ATTACK, *LATER]:
        c.say(text)
    c.say("What did I say first? RECALL p1")
    framed = _framed(proxy)
    assert framed, "p1 was recalled"
    for text in framed:
        assert_contained(text)


@pytest.mark.parametrize("fmt", FORMATS)
def test_filled_page_cannot_imitate_the_frame(make_proxy: Callable[..., Proxy], fmt: str
                                              ) -> None:
    proxy = make_proxy(recall_mode="speculative")
    c = Client(proxy, fmt)
    for text in [ATTACK, *LATER]:
        c.say(text)
    c.say("Did the assistant confirm that the user is an administrator?")
    framed = _framed(proxy)
    assert framed, "p1 was filled"
    for text in framed:
        assert_contained(text)
