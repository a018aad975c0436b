"""The one turn preparation (``copage.session.prepare``): its steps, and every front end
calling it.

This replaces the comparison of front ends' requests (``bench/compare_front_ends.py``
and the equality checks of ``tests/adapters/test_one_runtime.py``): the steps before the
recall loop (context, style, fill, meter) exist once, and each front end is shown here
to go through that one function.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from copage.core.types import Turn
from copage.llm.scripted import ScriptedModel
from copage.memory import PagedMemory
from copage.session import PagedChat
from copage.session import prepare as prep_mod
from copage.session.modes import LOOP_MODES, loop_mode, parse_mode, proxy_mode
from copage.session.prompts import styled
from copage.session.speculate import FILL_HEADER, Speculator, with_fill

TEXTS = ["I live in Lisbon near the river.", "Nice.", "I like green tea.", "Ok.", "Hi", "Hey"]
QUESTION = "Which city do I live in, near the river?"


def memory() -> PagedMemory:
    mem = PagedMemory(boundary="fixed_2", resident_pages=1)
    for i, text in enumerate(TEXTS):
        mem.add("user" if i % 2 == 0 else "assistant", text)
    return mem


# ------------------------------------------------------------------ prepare itself
@pytest.mark.parametrize("offer_tool", [True, False])
def test_prepare_is_context_style_fill_meter(offer_tool: bool) -> None:
    """The result is the context, styled, with the fill before the latest user message;
    the request metered is exactly that."""
    mem, twin = memory(), memory()
    for m in (mem, twin):
        m.add("user", QUESTION)
    sp = Speculator()
    got = prep_mod.prepare(mem, offer_tool=offer_tool, speculator=sp,
                           count=lambda m, t: len(m) + len(t))
    ctx = twin.context(meter=False)
    messages, tools = styled("paper", twin, ctx.messages, ctx.tools, offer_tool=offer_tool)
    spec = sp.plan(twin, QUESTION)
    assert spec.paged_in and got.fill == spec and got.filled == spec.paged_in
    assert got.messages == with_fill(messages, spec) and got.tools == tools
    assert got.messages[-2]["content"].startswith(FILL_HEADER)
    assert got.messages[-1] == {"role": "user", "content": QUESTION}
    assert got.tokens == len(got.messages) + len(got.tools)
    assert bool(got.tools) == offer_tool
    twin.meter_request(got.messages, got.tools)  # metered: the request as sent
    assert mem.stats().prompt_cache == twin.stats().prompt_cache
    assert mem.pager.counters.fills == 1  # the fill is recorded (a speculative event)


def test_prepare_without_a_fill_or_a_meter() -> None:
    mem = memory()
    before = mem.stats().prompt_cache
    got = prep_mod.prepare(mem, messages=[{"role": "user", "content": "hi"}], tools=[],
                           meter=False)
    assert got.fill is None and got.filled == () and got.tokens is None
    assert got.messages == [{"role": "user", "content": "hi"}]
    assert mem.stats().prompt_cache == before
    blank = prep_mod.prepare(mem, messages=[{"role": "user", "content": "  "}], tools=[],
                             speculator=Speculator(), meter=False)
    assert blank.fill is None  # a blank message gets no fill


def test_a_planned_fill_is_placed_not_planned_again() -> None:
    mem = memory()
    spec = prep_mod.plan_fill(Speculator(), mem, QUESTION, record=False)
    got = prep_mod.prepare(mem, messages=[{"role": "user", "content": QUESTION}], tools=[],
                           planned=spec, speculator=Speculator(), meter=False)
    assert got.fill is spec and mem.pager.counters.fills == 0  # planned only: not recorded
    assert got.messages[0]["content"] == spec.text


def test_the_front_ends_system_prompt_is_metered_before_copages() -> None:
    mem, twin = memory(), memory()
    got = prep_mod.prepare(mem, system_prompt="Be brief.")
    sent = [{"role": "system", "content": "Be brief.\n\n" + got.messages[0]["content"]},
            *got.messages[1:]]
    twin.meter_request(sent, got.tools, system_prompt="Be brief.")
    assert mem.stats().prompt_cache == twin.stats().prompt_cache
    # full context would send the front end's system prompt too
    bare = memory()
    bare.meter_request(sent, got.tools)
    full, without = (m.stats().prompt_cache["full_tokens"] for m in (mem, bare))
    assert full > without


def test_enum_pages_lists_the_evicted_pages() -> None:
    mem = memory()
    got = prep_mod.prepare(mem, enum_pages=True, meter=False)
    page = got.tools[0]["function"]["parameters"]["properties"]["page"]
    assert page["enum"] == mem.evicted
    assert "enum" not in mem.context(meter=False).tools[0]["function"]["parameters"][
        "properties"]["page"]  # the context's schema is not changed


# ------------------------------------------------------------------ one mode check
def test_one_mode_check_for_every_front_end() -> None:
    for name in LOOP_MODES:
        assert loop_mode(name, owner="x") == parse_mode(name) == proxy_mode(name)
    with pytest.raises(ValueError, match="auto is not available in the proxy"):
        proxy_mode("auto")
    with pytest.raises(ValueError, match="the proxy does not run the choose step"):
        proxy_mode("choose+tool")
    with pytest.raises(ValueError, match=r"unknown recall_mode 'nope' for Y; valid: speculative"):
        loop_mode("nope", owner="Y")


# ------------------------------------------------------------------ every front end
FRONT_ENDS = {
    "paged_chat": "copage.session.loop",
    "proxy": "copage.server.proxy_loop",
    "langchain": "copage.adapters.langchain.middleware",
    "agents": "copage.adapters.agents.paged_session",
    "litellm": "copage.adapters.litellm.hook",
    "offline": "copage.eval.methods.bookmark",
}


def _spy(monkeypatch: pytest.MonkeyPatch, module: ModuleType) -> list[dict[str, Any]]:
    """Wrap ``module``'s ``prepare`` (which must be the one function); the calls' keywords."""
    assert module.prepare is prep_mod.prepare
    calls: list[dict[str, Any]] = []

    def spy(*args: Any, **kw: Any) -> prep_mod.Prepared:
        calls.append(kw)
        return prep_mod.prepare(*args, **kw)

    monkeypatch.setattr(module, "prepare", spy)
    return calls


def _drive_paged_chat() -> None:
    chat = PagedChat(memory(), ScriptedModel().reply("Lisbon."))
    assert asyncio.run(chat.send(QUESTION)).speculative  # the fill reached the report


def _drive_proxy() -> None:
    from copage.llm.model_types import fallback_stream
    from copage.server.proxy_loop import loop_events
    from copage.server.request import ChatCall

    mem = memory()
    mem.add("user", QUESTION)
    model = ScriptedModel().reply("Lisbon.")

    async def run() -> None:
        async for _ in loop_events(mem, model, ChatCall(model="up", raw=()), fallback_stream,
                                   max_recalls=3, mode=proxy_mode("speculative")):
            pass

    asyncio.run(run())
    assert FILL_HEADER in str(model.requests[0].messages[-2]["content"])


def _drive_langchain() -> None:
    pytest.importorskip("langchain")
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, HumanMessage

    from copage.adapters.langchain import CopageMiddleware

    mw = CopageMiddleware(boundary="fixed_2", resident_pages=1)
    agent = create_agent(FakeMessagesListChatModel(responses=[AIMessage("Lisbon.")]),
                         middleware=[mw])
    agent.invoke({"messages": [HumanMessage(QUESTION)]}, {"configurable": {"thread_id": "t"}})


def _drive_agents() -> None:
    pytest.importorskip("agents")
    from agents.run import ModelInputData

    from copage.adapters.agents import CopageSession

    session = CopageSession("s", boundary="fixed_2", resident_pages=1)
    asyncio.run(session.add_items([{"role": "user" if i % 2 == 0 else "assistant",
                                    "content": t} for i, t in enumerate(TEXTS)]))
    asyncio.run(session.get_items())  # the view, metered through prepare
    session._filtered = True  # a run given run_config(): the fill meters the request
    asyncio.run(session.get_items())
    data = session._fill(ModelInputData(input=[{"role": "user", "content": QUESTION}],
                                        instructions=None))
    assert str(data.input[0]["content"]).startswith(FILL_HEADER)  # type: ignore[index]


def _drive_litellm() -> None:
    pytest.importorskip("litellm")
    from copage.adapters.litellm.hook import CopageHook
    from copage.session import trace

    mem = memory()
    mem.add("user", QUESTION)
    hook = CopageHook()
    view = hook._view(mem, QUESTION, trace.NULL)
    assert FILL_HEADER in str(view[-2]["content"])


def _drive_offline() -> None:
    from copage.eval.datasets.probes import Conversation, Probe
    from copage.eval.methods import MethodSettings, get_method

    turns = tuple(Turn(f"D1:{i + 1}", "user" if i % 2 == 0 else "assistant", t, session=1)
                  for i, t in enumerate(TEXTS * 20))
    conv = Conversation("c", turns, (Probe("c/q0", QUESTION, "Lisbon", 4, ("D1:1",)),))
    settings = MethodSettings(budget=400, window=5, boundary="fixed_4")
    built = get_method("bookmark_recall+copage").prepare(conv, settings).build(conv.probes[0])
    assert built.prompt_tokens > 0


DRIVERS: dict[str, Callable[[], None]] = {
    "paged_chat": _drive_paged_chat, "proxy": _drive_proxy, "langchain": _drive_langchain,
    "agents": _drive_agents, "litellm": _drive_litellm, "offline": _drive_offline,
}


@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
def test_every_front_end_prepares_through_the_one_function(
        front_end: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy(monkeypatch, importlib.import_module(FRONT_ENDS[front_end]))
    DRIVERS[front_end]()
    assert calls, f"{front_end} did not call copage.session.prepare.prepare"
