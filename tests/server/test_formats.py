"""The same proxy behaviour through every client format (Chat Completions, the Responses
API resending its input or continuing ``previous_response_id``, Anthropic Messages),
each driven by its official SDK against a real HTTP server of the proxy."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from formats import FORMATS, Client
from proxy_helpers import KEY_B, Proxy

from copage.memory import PagedMemory
from copage.server.testing import Reply

FACTS = ["My sister Marta lives in Lisbon.", "I am allergic to peanuts.",
         "My budget is 450 dollars.", "The meeting moved to Thursday."]


def _conversations(proxy: Proxy, tenant: str = "alice") -> list[str]:
    return [c.id for c in proxy.state.store.list_conversations(tenant=tenant)]


def _turns(proxy: Proxy, cid: str, tenant: str = "alice") -> list[tuple[str, str]]:
    mem = PagedMemory(store=proxy.state.store, conversation_id=cid, tenant=tenant,
                      create=False)
    return [(t.role, t.text) for t in mem.turns]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_pages_and_recall_in_one_conversation(proxy: Proxy, fmt: str, stream: bool) -> None:
    c = Client(proxy, fmt, stream=stream)
    for fact in FACTS:
        assert c.say(fact).text == f"echo: {fact}"
    assert len(_conversations(proxy)) == 1, "the client's turns continue one conversation"
    sent = proxy.upstream.received[-1]
    system = sent["messages"][0]["content"]
    assert sent["messages"][0]["role"] == "system" and system.startswith("Be brief.")
    assert "[p1:" in system and "[p2:" in system, "the upstream sees the bookmarks"
    wire = json.dumps(sent["messages"])
    assert FACTS[0] not in wire and FACTS[3] in wire
    n = len(proxy.upstream.received)
    seen = c.say("Where does my sister live? RECALL p1")
    assert len(proxy.upstream.received) == n + 2, "one recall round trip"
    assert seen.text.startswith('tool said: <page id="p1">') and "Marta" in seen.text
    assert seen.calls == [], "the client never sees the recall tool"
    assert _conversations(proxy) == [cid := _conversations(proxy)[0]]
    turns = _turns(proxy, cid)
    assert [r for r, _ in turns] == ["user", "assistant"] * 5, "nothing stored twice"
    if not stream:
        assert seen.conversation_id == cid and seen.stats["recalled"] == ["p1"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_client_tool_round_trip(proxy: Proxy, fmt: str, stream: bool) -> None:
    c = Client(proxy, fmt, stream=stream, tools=True)
    c.say("Hello there.")
    seen = c.say("What is the WEATHER in Paris?")
    assert [(name, args) for _, name, args in seen.calls] == [("get_weather",
                                                               {"city": "Paris"})]
    call_id = seen.calls[0][0]
    up = proxy.upstream.received[-1]
    assert [t["function"]["name"] for t in up["tools"]] == ["get_weather"]
    after = c.tool_result(call_id, "18C and sunny")
    assert after.text == "tool said: 18C and sunny" and after.calls == []
    last = proxy.upstream.received[-1]["messages"]
    assert last[-1] == {"role": "tool", "tool_call_id": call_id, "content": "18C and sunny"}
    assert last[-2]["tool_calls"][0]["id"] == call_id
    (cid,) = _conversations(proxy)
    roles = [r for r, _ in _turns(proxy, cid)]
    assert roles == ["user", "assistant", "user", "assistant", "tool", "assistant"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_sdk_retry_is_answered_from_the_store(make_proxy: Callable[..., Proxy],
                                              fmt: str) -> None:
    proxy = make_proxy()
    calls = {"n": 0}

    def respond(body: dict[str, Any]) -> Reply:
        calls["n"] += 1
        slow = body["messages"][-1].get("content") == "slow question"
        return Reply(text=f"answer {calls['n']}", delay=2.0 if slow else 0.0)

    proxy.upstream.responder = respond
    c = Client(proxy, fmt)
    first = c.say("u1")
    # the SDK times out after 1 s and retries (X-Stainless-Retry-Count: 1) while the
    # proxy still waits for the upstream: the retry gets the turn's stored answer
    retrying = Client(proxy, fmt, max_retries=4, timeout=1.0)
    retrying.history, retrying.previous = c.history, c.previous
    again = retrying.say("slow question")
    assert again.stats.get("replayed") is True
    asked = [b for b in proxy.upstream.received if b["messages"][-1].get("content")
             == "slow question"]
    assert len(asked) == 1, "one upstream call for the question"
    (cid,) = _conversations(proxy)
    assert _turns(proxy, cid) == [("user", "u1"), ("assistant", first.text),
                                  ("user", "slow question"), ("assistant", again.text)]


def test_previous_response_id_from_an_older_response_forks(proxy: Proxy) -> None:
    c = Client(proxy, "responses-prev")
    c.say("u1")
    r1 = c.previous
    c.say("u2")
    (cid,) = _conversations(proxy)
    fork = Client(proxy, "responses-prev")
    fork.previous = r1
    seen = fork.say("another u2")
    assert seen.conversation_id != cid, "continuing an older response is a new branch"
    assert _turns(proxy, cid) == [("user", "u1"), ("assistant", "echo: u1"),
                                  ("user", "u2"), ("assistant", "echo: u2")]
    assert _turns(proxy, seen.conversation_id or "") == [
        ("user", "u1"), ("assistant", "echo: u1"), ("user", "another u2"),
        ("assistant", "echo: another u2")]
    # the branch continues from its own response id; the original from its own
    fork.say("u3 on the branch")
    c.say("u3 on the original")
    assert len(_conversations(proxy)) == 2
    assert _turns(proxy, cid)[-2] == ("user", "u3 on the original")


def test_previous_response_id_of_another_tenant_is_not_found(proxy: Proxy) -> None:
    import openai

    c = Client(proxy, "responses-prev")
    c.say("alice's secret 7319")
    bob = proxy.client(KEY_B)
    n = len(proxy.upstream.received)
    with pytest.raises(openai.BadRequestError) as err:
        bob.responses.create(model="m", input="what was it?", previous_response_id=c.previous)
    assert err.value.code == "previous_response_not_found"
    with pytest.raises(openai.BadRequestError) as err:
        bob.responses.create(model="m", input="x", previous_response_id="resp_garbage")
    assert err.value.code == "previous_response_not_found"
    assert len(proxy.upstream.received) == n, "refused before any upstream call"
    assert _conversations(proxy, "bob") == []
