"""Which conversation a LiteLLM request continues and which of its messages are new."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline (the package imports it)
pytest.importorskip("litellm")

from copage.adapters.litellm.align import align, conversation_of, transparent_id
from copage.adapters.litellm.hook import hook_mode
from copage.ids import InvalidConversationId
from copage.memory import PagedMemory

HISTORY = [("user", "hi"), ("assistant", "hello"), ("user", "plan Lisbon"),
           ("assistant", "sure")]


def stored() -> PagedMemory:
    mem = PagedMemory()
    for role, text in HISTORY:
        mem.add(role, text)
    mem.add("user", "weather?")
    mem.add("assistant", "", tool_calls=[{"id": "c1", "type": "function", "function": {
        "name": "get_weather", "arguments": '{"city": "Paris", "days": 2}'}}])
    mem.add("tool", "sunny", tool_call_id="c1")
    mem.add("assistant", "It is sunny.")
    return mem


def msgs(pairs: list[tuple[str, str]]) -> list[dict[str, object]]:
    return [{"role": r, "content": t} for r, t in pairs]


WEATHER = [{"role": "user", "content": "weather?"},
           {"role": "assistant", "content": None, "tool_calls": [{
               "id": "other-id", "type": "function",
               "function": {"name": "get_weather", "arguments": '{"days":2,"city":"Paris"}'}}]},
           {"role": "tool", "content": "sunny", "tool_call_id": "c1"},
           {"role": "assistant", "content": "It is sunny."}]


def test_the_whole_history_then_new_messages() -> None:
    request = [{"role": "system", "content": "be brief"}, *msgs(HISTORY), *WEATHER,
               {"role": "user", "content": "and tomorrow?"}]
    how = align(stored().turns, request)
    assert how.kind == "continue"
    assert [m["content"] for m in how.new] == ["and tomorrow?"]


def test_the_last_few_messages_then_new_ones() -> None:
    request = [*WEATHER[2:], {"role": "user", "content": "thanks"}]
    how = align(stored().turns, request)
    assert how.kind == "continue" and [m["content"] for m in how.new] == ["thanks"]


def test_only_new_messages() -> None:
    how = align(stored().turns, [{"role": "user", "content": "new question"}])
    assert how.kind == "continue" and len(how.new) == 1


def test_the_last_request_again_is_a_retry() -> None:
    assert align(stored().turns, [*msgs(HISTORY), *WEATHER[:1]]).kind == "retry"
    assert align(stored().turns, [*msgs(HISTORY), *WEATHER[:3]]).kind == "retry"


def test_an_edited_history_is_a_mismatch() -> None:
    edited = [*msgs(HISTORY[:1]), {"role": "assistant", "content": "something else"},
              {"role": "user", "content": "next"}]
    assert align(stored().turns, edited).kind == "mismatch"


def test_the_conversation_is_named_header_first() -> None:
    data = {"messages": msgs(HISTORY[:1]), "user": "u-1",
            "metadata": {"copage_conversation": "m-1"},
            "proxy_server_request": {"headers": {"X-Copage-Conversation": "h-1"}}}
    assert conversation_of(data, use_user=True) == ("h-1", True)
    del data["proxy_server_request"]
    assert conversation_of(data, use_user=True) == ("m-1", True)
    del data["metadata"]
    assert conversation_of(data, use_user=True) == ("u-1", True)
    cid, named = conversation_of(data, use_user=False)
    assert not named and cid == transparent_id(data["messages"]) and cid.startswith("lt_")
    # a client resending its history keeps its opening, so its id
    assert transparent_id([*msgs(HISTORY), {"role": "user", "content": "x"}]) == cid
    with pytest.raises(InvalidConversationId):
        conversation_of({"messages": [], "user": "has spaces"}, use_user=True)


def test_the_recall_tool_modes_are_refused() -> None:
    assert hook_mode("speculative").speculative and not hook_mode("none").speculative
    for mode in ("tool", "speculative+tool", "choose"):
        with pytest.raises(ValueError, match="not available in the LiteLLM hook"):
            hook_mode(mode)
