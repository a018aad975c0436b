"""A model whose window is smaller than the paging budget: the turn pages the
conversation down and asks again, through the real HTTP path (a loopback server that
answers 400 as llama.cpp's does when a request exceeds its context size)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from copage import PagedMemory
from copage.core.tokens import get_tokenizer
from copage.llm.errors import ContextOverflow
from copage.llm.fake_server import FakeServer, Reply
from copage.llm.openai_model import OpenAIModel
from copage.session import PagedChat

WINDOW = 4096
FACT = "My sister Ana moved to Porto last spring."


def model_tokens(body: dict[str, Any]) -> int:
    """The request's size as a small model's tokenizer counts it (1.3 x o200k)."""
    count = get_tokenizer().count
    text = " ".join(str(m.get("content") or "") for m in body["messages"])
    return int(1.3 * (count(text) + count(json.dumps(body.get("tools") or []))))


def small_window(body: dict[str, Any]) -> Reply:
    n = model_tokens(body)
    if n > WINDOW:
        return Reply(status=400, error=f"request ({n} tokens) exceeds the available context "
                                       f"size ({WINDOW} tokens), try increasing it")
    return Reply(text="Ana lives in Porto.")


def long_chat(mem: PagedMemory, turns: int = 400) -> PagedMemory:
    mem.add("user", FACT)
    mem.add("assistant", "Noted.")
    for i in range(turns):
        mem.add("user" if i % 2 == 0 else "assistant",
                f"Small talk {i}: the weather, the trains, lunch and the weekend {i * 3}.")
    return mem


def test_the_turn_pages_down_to_the_window_and_is_answered(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    mem = long_chat(PagedMemory(store=url, conversation_id="c"))  # the defaults: not paged
    assert not mem.evicted
    with FakeServer(small_window) as up:
        chat = PagedChat(mem, OpenAIModel("m", base_url=up.url, max_retries=0))
        report = chat.send_sync("Where does my sibling live these days?")
        sizes = [model_tokens(b) for b in up.received]
    assert report.answer == "Ana lives in Porto."
    assert len(sizes) == 2 and sizes[0] > WINDOW >= sizes[1]  # refused, then it fitted
    assert sizes[1] <= 0.75 * WINDOW  # paged to about half: room to grow
    assert mem.evicted and mem.stats().evictions == len(mem.evicted)
    # both requests were sent (the refused one is metered), full context counted once
    pc = mem.stats().prompt_cache
    twin = long_chat(PagedMemory())
    twin.add("user", "Where does my sibling live these days?")
    twin.meter_request([{"role": "user", "content": "x"}], [])
    assert pc is not None and pc["requests"] == 2
    assert pc["full_tokens"] == twin.stats().prompt_cache["full_tokens"]
    again = PagedMemory(store=url, conversation_id="c")  # stored with the turn
    assert again.evicted == mem.evicted and again.turns[-1].text == "Ana lives in Porto."
    # the next turns fit without a refusal until the conversation grows again
    with FakeServer(small_window) as up:
        PagedChat(again, OpenAIModel("m", base_url=up.url, max_retries=0)).send_sync("And you?")
        assert len(up.received) == 1


def test_a_message_longer_than_the_window_is_still_an_error_that_says_what_to_do() -> None:
    mem = PagedMemory()
    mem.add("user", "word " * 4000)  # the open page alone: nothing to evict
    with FakeServer(small_window) as up:
        chat = PagedChat(mem, OpenAIModel("m", base_url=up.url, max_retries=0))
        with pytest.raises(ContextOverflow, match="budget_tokens=1600"):
            chat.send_sync("Summarise that.")
        assert len(up.received) == 1
    assert len(mem.turns) == 1  # the failed turn is not stored


def test_other_rejections_are_not_retried() -> None:
    mem = long_chat(PagedMemory())
    with FakeServer(lambda body: Reply(status=400, error="temperature must be <= 2")) as up:
        chat = PagedChat(mem, OpenAIModel("m", base_url=up.url, max_retries=0))
        with pytest.raises(Exception, match="temperature"):
            chat.send_sync("Where does my sibling live these days?")
        assert len(up.received) == 1
    assert not mem.evicted


def _refused(body: dict[str, Any]) -> bool:
    return model_tokens(body) > WINDOW


def test_a_growing_chat_is_refused_once_then_paged_before_it_is_sent() -> None:
    """The refusal's window is remembered: later turns that would pass it are paged down
    before they are sent, so a chat that grows for several windows is refused once (as
    paging by a budget equal to the window would, never more)."""
    mem = long_chat(PagedMemory())
    news = ("Today's news: the council met about the bridge, the tram line and the "
            "market square, and {i} residents spoke for an hour about parking. ") * 4
    with FakeServer(small_window) as up:
        chat = PagedChat(mem, OpenAIModel("m", base_url=up.url, max_retries=0))
        for i in range(40):  # about 150 tokens a turn: four windows of growth
            assert chat.send_sync(news.format(i=i)).answer == "Ana lives in Porto."
        refused = [b for b in up.received if _refused(b)]
        sizes = [model_tokens(b) for b in up.received if not _refused(b)]
    assert len(refused) == 1
    assert len(sizes) == 40 and max(sizes) <= WINDOW
    assert len(mem.turns) == len(long_chat(PagedMemory()).turns) + 80  # every turn stored
    pc = mem.stats().prompt_cache
    assert pc is not None and pc["requests"] == 41  # each request metered once, as sent
