"""One cap rule and one call-shaped-text filter behind every front end.

PagedChat, the LangChain middleware, the proxy (``copage serve``, header mode) and
the Agents session are each driven against the same loopback OpenAI-compatible
server with the same script; what reaches the model and what comes back as the
answer must be the same. In their default recall mode (speculative), PagedChat, the
middleware and the proxy send the fill, and so does the Agents session given its
``run_config()`` (all prepare it with one function, ``copage.session.prepare``:
tests/session/test_prepare.py).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("langchain_openai")
pytest.importorskip("agents")

from adapter_fixtures import PAGING, TURNS
from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from openai import AsyncOpenAI

from copage import PagedMemory, PagerConfig
from copage.adapters.agents import CopageSession
from copage.adapters.langchain import CopageMiddleware
from copage.llm import get_model
from copage.llm.fake_server import FakeServer, Reply
from copage.session import PagedChat, RecallLoopError
from copage.session.speculate import FILL_HEADER
from copage.stores.inmemory import MemoryStore

set_tracing_disabled(True)

QUESTION = "What is my locker code?"
CID = "one-runtime"


def _refusal(cap: int) -> str:
    return (f"error: the limit of {cap} recall calls per turn is reached; "
            "answer now with what you have.")


def _memory(store: MemoryStore | str) -> PagedMemory:
    mem = PagedMemory(store=store, conversation_id=CID, config=PagerConfig(**PAGING))
    for role, text in TURNS:
        mem.add(role, text)
    return mem


def _mode(mode: str | None) -> dict[str, Any]:
    """The ``recall_mode`` keyword (none: the front end's default)."""
    return {} if mode is None else {"recall_mode": mode}


def _paged_chat(url: str, cap: int, mode: str | None = "tool") -> tuple[str, PagedMemory]:
    mem = _memory(MemoryStore())
    model = get_model(f"openai:fake-model@{url}", api_key="sk-test", max_retries=0)
    chat = PagedChat(mem, model, max_recalls_per_turn=cap, **_mode(mode))
    try:
        return chat.send_sync(QUESTION).answer, mem
    finally:
        chat.close()


def _langchain(url: str, cap: int, mode: str | None = "tool") -> tuple[str, PagedMemory]:
    store = MemoryStore()
    _memory(store)
    mw = CopageMiddleware(store, max_recalls=cap, **_mode(mode), **PAGING)
    model = ChatOpenAI(model="fake-model", base_url=url, api_key="sk-test", max_retries=0)
    agent = create_agent(model, tools=[], middleware=[mw])
    out = agent.invoke({"messages": [HumanMessage(QUESTION)]},
                       {"configurable": {"thread_id": CID}})
    return str(out["messages"][-1].content), mw.memory(CID)


def _proxy(url: str, cap: int, mode: str | None = "tool") -> tuple[str, PagedMemory]:
    """``copage serve`` in header mode, in front of ``url``, on a stored conversation."""
    import tempfile

    import httpx

    from copage.server.app import create_app
    from copage.server.server_thread import ServerThread
    from copage.server.settings import ServeSettings

    store = f"sqlite://{tempfile.mkdtemp(prefix='copage-one-runtime-')}/proxy.db"
    _memory(store)
    settings = ServeSettings(upstream=url, store=store, keys={}, max_recalls=cap,
                             paging=PagerConfig(**PAGING), upstream_key="sk-test", **_mode(mode))
    with ServerThread(create_app(settings)) as srv:
        r = httpx.post(f"{srv.url}/v1/chat/completions", headers={"X-Copage-Conversation": CID},
                       json={"model": "fake-model",
                             "messages": [{"role": "user", "content": QUESTION}]}, timeout=30)
    if r.status_code == 502:  # the engine's failure, as the proxy reports it
        raise RecallLoopError("proxy", r.json()["error"]["message"])
    r.raise_for_status()
    return str(r.json()["choices"][0]["message"]["content"]), PagedMemory(
        store=store, conversation_id=CID, create=False)


def _agents(url: str, cap: int, fill: bool = False) -> tuple[str, PagedMemory]:
    session = CopageSession(CID, max_recalls=cap, **PAGING)
    items: list[Any] = [
        {"role": "user", "content": t} if r == "user" else
        {"type": "message", "id": f"msg_{i}", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": t, "annotations": []}]}
        for i, (r, t) in enumerate(TURNS)]
    asyncio.run(session.add_items(items))
    model = OpenAIChatCompletionsModel(
        model="fake-model",
        openai_client=AsyncOpenAI(base_url=url, api_key="sk-test", max_retries=0))
    agent = Agent(name="a", instructions="Be brief.", model=model,
                  tools=[session.recall_tool()])
    result = Runner.run_sync(agent, QUESTION, session=session,
                             **({"run_config": session.run_config()} if fill else {}))
    mem = session.memory()
    assert mem is not None
    return str(result.final_output), mem


Driver = Callable[..., tuple[str, PagedMemory]]
ALL: dict[str, Driver] = {"paged_chat": _paged_chat, "langchain": _langchain,
                          "agents": _agents, "proxy": _proxy}
# The Agents SDK runs its own model loop: copage serves its recall tool only, so the
# requests after the cap and the reply's text are the SDK's.
LOOP_OWNERS = ["paged_chat", "langchain", "proxy"]


def _run(driver: str, script: list[Reply], cap: int, **kw: Any
         ) -> tuple[str, PagedMemory, list[dict[str, Any]]]:
    queue = deque(script)
    with FakeServer(lambda _body: queue.popleft()) as up:
        answer, mem = ALL[driver](up.url, cap, **kw)
    assert not queue, f"{len(queue)} scripted replies were not asked for"
    return answer, mem, up.received


def _tool_results(body: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]


def _names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


@pytest.mark.parametrize("driver", list(ALL))
def test_the_cap_refuses_the_same_way_everywhere(driver: str) -> None:
    script = [Reply(tool_calls=[("recall", {"page": "p1"})]),
              Reply(tool_calls=[("recall", {"page": "p3"})]),
              Reply(text="It is 4471.")]
    answer, mem, received = _run(driver, script, cap=1)
    assert answer == "It is 4471."
    results = _tool_results(received[-1])
    assert len(results) == 2 and "4471" in results[0]
    assert results[1] == _refusal(1)  # the second recall of the turn is refused
    assert "p1" in mem.resident and "p3" not in mem.resident


@pytest.mark.parametrize("driver", LOOP_OWNERS)
def test_after_the_cap_none_then_no_tool_then_an_error(driver: str) -> None:
    script = [Reply(tool_calls=[("recall", {"page": "p1"})]),
              Reply(tool_calls=[("recall", {"page": "p2"})]),
              Reply(tool_calls=[("recall", {"page": "p3"})])]
    with pytest.raises(RecallLoopError, match="still calling tools after the cap of 1"):
        _run(driver, script, cap=1)


@pytest.mark.parametrize("driver", LOOP_OWNERS)
def test_the_request_after_the_cap_says_none(driver: str) -> None:
    script = [Reply(tool_calls=[("recall", {"page": "p1"})]),
              Reply(tool_calls=[("recall", {"page": "p2"})]),
              Reply(text="It is 4471.")]
    answer, _mem, received = _run(driver, script, cap=1)
    assert answer == "It is 4471."
    assert "recall" in _names(received[1]) and received[1]["tool_choice"] == "none"
    assert "recall" not in _names(received[2])
    assert _tool_results(received[2])[-1] == _refusal(1)


@pytest.mark.parametrize("text", ["RECALL p1", "p1", "`p1`",
                                  ('<tool_call>{"name": "recall", "arguments": {"page": "p1"}}'
                                   "</tool_call>")])
@pytest.mark.parametrize("driver", LOOP_OWNERS)
def test_a_recall_written_as_text_is_served_and_never_kept(driver: str, text: str) -> None:
    script = [Reply(text=text), Reply(text="It is 4471.")]
    answer, mem, received = _run(driver, script, cap=3)
    assert answer == "It is 4471."
    assert len(received) == 2 and "4471" in _tool_results(received[1])[0]
    assert "p1" in mem.resident
    assert mem.turns[-1].text == "It is 4471."
    assert all("p1" not in str(m.get("content")) for m in received[1]["messages"]
               if m["role"] == "assistant")


@pytest.mark.parametrize("driver", LOOP_OWNERS)
def test_call_shaped_text_after_the_cap_is_refused_and_left_out(driver: str) -> None:
    script = [Reply(tool_calls=[("recall", {"page": "p1"})]),
              Reply(text="Your code is 4471.\nRECALL p3")]
    answer, mem, _received = _run(driver, script, cap=1)
    assert answer == "Your code is 4471."
    assert "p3" not in mem.resident
    assert mem.turns[-1].text == "Your code is 4471."


# The middleware's model call is the engine's loop (run_recall_loop), not a copy of its
# rules: what the engine does beyond the cap and the filter holds for it as for PagedChat.

@pytest.mark.parametrize("driver", LOOP_OWNERS)
def test_text_written_before_a_recall_is_part_of_the_answer(driver: str) -> None:
    script = [Reply(text="Let me look.", tool_calls=[("recall", {"page": "p1"})]),
              Reply(text="It is 4471.")]
    answer, mem, received = _run(driver, script, cap=3)
    assert answer == "Let me look.\n\nIt is 4471."
    assert mem.turns[-1].text == answer
    assert len(received) == 2 and "4471" in _tool_results(received[1])[0]



@pytest.mark.parametrize("driver", LOOP_OWNERS)
def test_the_default_mode_sends_the_fill(driver: str) -> None:
    """PagedChat's default recall mode is the middleware's and the proxy's: the
    speculative step (the matching evicted page just before the question, no recall
    tool) reaches the model, and none of them stores the fill. (That they prepare it
    with one function: tests/session/test_prepare.py.)"""
    answer, mem, received = _run(driver, [Reply(text="It is 4471.")], 3, mode=None)
    assert answer == "It is 4471." and len(received) == 1
    assert not received[0].get("tools")
    sent = [(m["role"], str(m["content"])) for m in received[0]["messages"]]
    role, fill = sent[-2]
    assert role == "user" and fill.startswith(FILL_HEADER) and "4471" in fill
    assert sent[-1] == ("user", QUESTION)
    assert not any(FILL_HEADER in t.text for t in mem.turns)
    assert "p1" in mem.evicted  # shown for the turn, not made resident


def test_the_agents_run_config_sends_the_fill() -> None:
    """The Agents session's ``run_config()`` runs the speculative step: the fill just
    before the question, not stored."""
    answer, mem, agents = _run("agents", [Reply(text="It is 4471.")], 3, fill=True)
    assert answer == "It is 4471."
    tail = [(m["role"], str(m["content"])) for m in agents[0]["messages"]][-2:]
    assert tail[0][0] == "user" and tail[0][1].startswith(FILL_HEADER) and "4471" in tail[0][1]
    assert tail[1] == ("user", QUESTION)
    assert not any(FILL_HEADER in t.text for t in mem.turns)
