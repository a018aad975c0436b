"""Long agent sessions: tool results are paged like turns; a tool call is never separated
from its result in what the upstream is sent (in any client format, and after the
translation to an upstream speaking Messages); recall brings an evicted tool output back."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from formats import FORMATS, Client
from proxy_helpers import KEY_A, Proxy, script

from copage.core.config import PagerConfig
from copage.llm.fake_server import Reply


def agent_script(body: dict[str, Any]) -> Reply:
    """READ name calls read_file; RECALL pN recalls; a tool result is acknowledged."""
    last = body["messages"][-1]
    text = last.get("content") or ""
    names = [t["function"]["name"] for t in body.get("tools", [])]
    if last["role"] == "user" and text.startswith("READ ") and "read_file" in names:
        return Reply(tool_calls=[("read_file", {"path": text.split()[1]})])
    if last["role"] == "tool" and not text.startswith("<page"):
        return Reply(text=f"read {len(text)} characters")
    return script(body)


def output_of(path: str) -> str:
    return " ".join(f"{path}-line{i} value {i * 13}" for i in range(60))


def check_pairing(messages: list[dict[str, Any]]) -> None:
    """Every tool result right after its call's assistant message; every call answered."""
    pending: set[str] = set()
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            assert m["tool_call_id"] in pending, f"tool result {i} without its call"
            pending.discard(m["tool_call_id"])
        else:
            assert not pending, f"calls {pending} not answered before message {i}"
            pending = {c["id"] for c in m.get("tool_calls") or ()}


def _session(proxy: Proxy, c: Client, files: int) -> None:
    proxy.upstream.responder = agent_script
    c.tools = True
    for n in range(files):
        seen = c.say(f"READ file{n}.txt")
        assert [name for _, name, _ in seen.calls] == ["read_file"]
        after = c.tool_result(seen.calls[0][0], output_of(f"file{n}"))
        assert after.text.startswith("read ")




@pytest.mark.parametrize("fmt", FORMATS)
def test_tool_results_are_paged_with_their_calls(make_proxy: Callable[..., Proxy],
                                                 fmt: str) -> None:
    proxy = make_proxy(paging=PagerConfig(boundary="fixed_4", resident_pages=2))
    c = Client(proxy, fmt, tool_name="read_file")
    _session(proxy, c, 12)
    for body in proxy.upstream.received:
        check_pairing(body["messages"])
    last = proxy.upstream.received[-1]
    wire = json.dumps(last["messages"])
    assert "file0-line5 value 65" not in wire, "the old tool output was evicted"
    assert "[p1:" in last["messages"][0]["content"]
    seen = c.say("What did file0 say on line 5? RECALL p1")
    assert seen.text.startswith('tool said: <page id="p1">') and seen.calls == []
    served = proxy.upstream.received[-1]["messages"][-1]
    assert served["role"] == "tool" and "file0-line5 value 65" in served["content"], \
        "the recall brought the evicted tool output back"


def test_pairing_holds_through_a_messages_upstream(make_proxy: Callable[..., Proxy]) -> None:
    b = make_proxy(paging=PagerConfig())
    a = make_proxy(upstream=b.url + "/v1", upstream_api="messages", upstream_key=KEY_A,
                   paging=PagerConfig(boundary="fixed_4", resident_pages=2))
    c = Client(a, "responses", tool_name="read_file")
    _session(a, c, 10)
    assert len(b.upstream.received) >= 20
    for body in b.upstream.received:
        check_pairing(body["messages"])
