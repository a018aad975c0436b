"""Paging stays out of the prompt until a page is evicted: a short conversation goes to
the model as it is (no preamble, no empty bookmark list, no recall tool), and the
token figures say so."""

from __future__ import annotations

from copage.core import prompt
from copage.memory import PagedMemory


def _mem() -> PagedMemory:
    mem = PagedMemory(store="memory://", boundary="fixed_2", resident_pages=2,
                      keywords="heuristic")
    mem.add("system", "Answer briefly.")
    return mem


def test_nothing_evicted_means_the_conversation_as_it_is() -> None:
    mem = _mem()
    for i in range(5):  # pages p1, p2 closed and resident, turn 5 open
        mem.add("user" if i % 2 == 0 else "assistant", f"message {i}")
    assert mem.evicted == []
    ctx = mem.context()
    assert ctx.tools == []
    assert ctx.messages[0] == {"role": "system", "content": "Answer briefly."}
    assert [m["content"] for m in ctx.messages[1:]] == [f"message {i}" for i in range(5)]
    tok = mem.pager.tokenizer  # no preamble or tool schema counted either
    shown = tok.count("Answer briefly.") + sum(p.tokens for p in mem.pages) + sum(
        tok.count(prompt.turn_content(t)) for t in mem.pager.open_turns)
    assert ctx.stats.prompt_tokens == shown
    # stats() counts the request as sent (context() metered it), message framing included
    assert mem.stats().prompt_tokens >= shown


def test_the_first_eviction_brings_the_preamble_bookmarks_and_tool() -> None:
    mem = _mem()
    for i in range(6):  # the third page closes: p1 is evicted
        mem.add("user" if i % 2 == 0 else "assistant", f"message {i} about gardening")
    assert mem.evicted == ["p1"]
    ctx = mem.context()
    assert [t["function"]["name"] for t in ctx.tools] == ["recall"]
    system = ctx.messages[0]["content"]
    assert system.startswith("Answer briefly.\n\n") and "[p1:" in system and "recall" in system


def test_without_a_system_prompt_no_system_message() -> None:
    mem = PagedMemory(store="memory://", boundary="fixed_2", resident_pages=2)
    mem.add("user", "hi")
    assert mem.context().messages == [{"role": "user", "content": "hi"}]


def test_every_prompt_style_and_mode_leaves_an_unpaged_conversation_alone() -> None:
    from copage.session.prompts import PROMPT_STYLES, styled

    mem = _mem()
    for i in range(3):
        mem.add("user" if i % 2 == 0 else "assistant", f"message {i}")
    ctx = mem.context()
    for style in PROMPT_STYLES:
        for offer_tool in (True, False):  # tool modes and answer-only modes (choose, speculative)
            messages, tools = styled(style, mem.pager, ctx.messages, ctx.tools,
                                     offer_tool=offer_tool)
            assert (messages, tools) == (ctx.messages, []), (style, offer_tool)
