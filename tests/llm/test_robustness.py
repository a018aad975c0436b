"""Adapter defects of issue 8: malformed replies, parameter rules, Anthropic shapes, sockets."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from copage.core.types import ToolCall
from copage.llm import BadResponse, ChatRequest, complete_sync, get_model
from copage.llm.chat_messages import assistant_message, tool_message
from copage.llm.fake_server import FakeReply, FakeServer
from copage.llm.params import REASONING, STANDARD, param_rule

from .conftest import RECALL_TOOL, SECRET, fixture

USER = ({"role": "user", "content": "Where should I eat?"},)


def openai_model(server: FakeServer, name: str = "gpt-4o-mini", **kw: object) -> Any:
    return get_model(f"openai:{name}@{server.url}", api_key=SECRET, max_retries=0, **kw)


# ---------------------------------------------------------------- malformed 200s
@pytest.mark.parametrize(
    "reply",
    [
        FakeReply(raw=b"<html><body>502 Bad Gateway</body></html>", content_type="text/html"),
        FakeReply({"choices": [{"message": "oops"}]}),
        FakeReply({"choices": "oops"}),
        FakeReply([1, 2, 3]),
        FakeReply({"choices": [{"message": {"content": "hi", "tool_calls": "zz"}}]}),
        FakeReply({"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": "x"}}),
        FakeReply({"choices": [{"message": {"content": {"text": "hi"}}}]}),
    ],
    ids=["html", "message-str", "choices-str", "list", "tool-calls-str", "usage-str", "content-obj"],
)
async def test_malformed_200_is_bad_response(reply: FakeReply) -> None:
    with FakeServer(reply) as srv, pytest.raises(BadResponse):
        await openai_model(srv).complete(ChatRequest(USER))


async def test_anthropic_malformed_200_is_bad_response() -> None:
    with FakeServer(FakeReply({"content": ["oops"], "stop_reason": "end_turn"})) as srv:
        model = get_model(f"anthropic:claude-haiku-4-5@{srv.root}", api_key=SECRET, max_retries=0)
        with pytest.raises(BadResponse):
            await model.complete(ChatRequest(USER))


# ---------------------------------------------------------------- parameter rules
def test_param_rules_by_name() -> None:
    for name in ("gpt-5-mini", "gpt-5", "o3-mini", "o1", "openai/gpt-5-nano", "o4-mini-2025-04-16"):
        assert param_rule(name) == REASONING, name
    for name in ("gpt-4o-mini", "gpt-4.1", "gpt-5-chat-latest", "qwen", "smollm2", "gpt-4o"):
        assert param_rule(name) == STANDARD, name


async def test_reasoning_model_gets_max_completion_tokens_and_no_temperature() -> None:
    with FakeServer(FakeReply(fixture("openai_chat_text.json"))) as srv:
        await openai_model(srv, "gpt-5-mini").complete(
            ChatRequest(USER, temperature=0.0, max_tokens=50)
        )
    body = srv.received[0]
    assert body["max_completion_tokens"] == 50
    assert "max_tokens" not in body and "temperature" not in body


async def test_rule_is_learned_from_the_servers_400_and_the_call_retried() -> None:
    reject = {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with "
                        "this model. Use 'max_completion_tokens' instead.",
                        "type": "invalid_request_error", "param": "max_tokens",
                        "code": "unsupported_parameter"}}
    reject_t = {"error": {"message": "Unsupported value: 'temperature' does not support 0 with "
                          "this model. Only the default (1) value is supported.",
                          "type": "invalid_request_error", "param": "temperature",
                          "code": "unsupported_value"}}
    with FakeServer(
        FakeReply(reject, status=400), FakeReply(reject_t, status=400),
        FakeReply(fixture("openai_chat_text.json")), FakeReply(fixture("openai_chat_text.json")),
    ) as srv:
        model = openai_model(srv, "house-reasoner")
        req = ChatRequest(USER, temperature=0.0, max_tokens=50)
        assert (await model.complete(req)).text
        assert (await model.complete(req)).text  # the learned rule is kept
    bodies = srv.received
    assert "max_tokens" in bodies[0]
    assert bodies[2]["max_completion_tokens"] == 50 and "temperature" not in bodies[2]
    assert bodies[3] == bodies[2]


# ---------------------------------------------------------------- Anthropic shapes
def anthropic_errors(body: Mapping[str, Any]) -> list[str]:
    """What the Messages API would reject with HTTP 400 (the rules copage can break)."""
    errors: list[str] = []
    msgs: Sequence[Mapping[str, Any]] = body["messages"]
    if not msgs or msgs[0]["role"] != "user":
        errors.append("first message must use the user role")
    for a, b in itertools.pairwise(msgs):
        if a["role"] == b["role"]:
            errors.append("roles must alternate")
    uses: set[str] = set()
    for m in msgs:
        for block in m["content"]:
            if block["type"] == "text" and not block["text"]:
                errors.append("text content blocks must be non-empty")
            if block["type"] == "tool_use":
                uses.add(block["id"])
                if "tools" not in body:
                    errors.append("tool_use blocks need the tools parameter")
            if block["type"] == "tool_result":
                if block["tool_use_id"] not in uses:
                    errors.append("tool_result without a matching tool_use")
                if "tools" not in body:
                    errors.append("tool_result blocks need the tools parameter")
    return errors


async def test_anthropic_after_cap_request_without_tools_is_valid() -> None:
    history = (
        {"role": "system", "content": "Bookmarks: [p1:peanut]"},
        {"role": "user", "content": "What am I allergic to?"},
        assistant_message("", [ToolCall("toolu_a", "recall", '{"page": "p1"}')]),
        tool_message("toolu_a", "<page>peanut allergy</page>"),
        assistant_message("", [ToolCall("toolu_b", "recall", '{"page": "p1"}')]),
        tool_message("toolu_b", "error: the limit of 1 recall calls per turn is reached"),
    )
    with FakeServer(default=FakeReply(fixture("anthropic_text.json"))) as srv:
        model = get_model(f"anthropic:claude-haiku-4-5@{srv.root}", api_key=SECRET)
        await model.complete(ChatRequest(history))  # the loop's last request: no tools
        await model.complete(ChatRequest(history, tools=(RECALL_TOOL,), tool_choice="none"))
    no_tools, with_tools = srv.received
    assert anthropic_errors(no_tools) == []
    assert "peanut allergy" in str(no_tools["messages"])  # the recalled page still reaches it
    assert anthropic_errors(with_tools) == []
    assert with_tools["tool_choice"] == {"type": "none"}


async def test_anthropic_assistant_first_conversation_starts_with_user() -> None:
    msgs = (
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": "Hi! How can I help?"},
        {"role": "user", "content": "Thai food ok?"},
    )
    with FakeServer(FakeReply(fixture("anthropic_text.json"))) as srv:
        model = get_model(f"anthropic:claude-haiku-4-5@{srv.root}", api_key=SECRET)
        await model.complete(ChatRequest(msgs))
    body = srv.received[0]
    assert anthropic_errors(body) == []
    assert body["messages"][1]["content"] == [{"type": "text", "text": "Hi! How can I help?",
                                               "cache_control": {"type": "ephemeral"}}]


# ---------------------------------------------------------------- sockets
def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_sync_calls_reuse_one_client_and_leak_no_sockets() -> None:
    body = fixture("openai_chat_text.json")
    with FakeServer(default=FakeReply(body)) as srv:
        model = openai_model(srv)
        complete_sync(model, USER)  # warm up: the shared loop and the client exist now
        before = open_fds()
        for _ in range(300):
            complete_sync(model, USER)
        after = open_fds()
        getattr(model, "close", lambda: None)()
    assert after - before <= 5, f"{after - before} descriptors leaked over 300 sync calls"


FD_SCRIPT = textwrap.dedent("""
    import resource, sys, time
    from copage.llm import complete_sync, get_model

    model = get_model(f"openai:m@{sys.argv[1]}/v1", max_retries=0, timeout=5)
    complete_sync(model, [{"role": "user", "content": "q"}])
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
    hog = []
    for _ in range(3):  # a socket the last call closes may free an fd a moment later
        try:
            while True:
                hog.append(open("/dev/null"))
        except OSError:
            time.sleep(0.2)
    try:
        complete_sync(model, [{"role": "user", "content": "q"}])
    except Exception as e:
        print("ERROR", type(e).__name__, e)
    else:
        print("NO_ERROR")
""")


@pytest.mark.skipif(sys.platform != "linux", reason="rlimit behaviour checked on Linux")
def test_fd_exhaustion_is_reported_as_itself() -> None:
    body = {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}]}
    reply = FakeReply(body, headers={"connection": "close"})  # every call needs a new socket
    # The server runs here, not in the child: the child's fd limit must only hit its client.
    with FakeServer(default=reply) as srv:
        out = subprocess.run(
            [sys.executable, "-c", FD_SCRIPT, srv.root], check=False, capture_output=True,
            text=True, timeout=60, env={**os.environ, "COPAGE_FORBID_NETWORK_MODELS": "1"},
        )
    assert "ERROR OutOfFileDescriptors" in out.stdout, out.stdout + out.stderr
    assert "too many open files" in out.stdout


def test_a_discarded_model_is_collected_with_its_client() -> None:
    import gc
    import weakref

    with FakeServer(default=FakeReply(fixture("openai_chat_text.json"))) as srv:
        model = openai_model(srv)
        complete_sync(model, USER)
        ref = weakref.ref(model)
        del model
        gc.collect()
    assert ref() is None  # nothing global (the shared loop's registry) keeps it alive


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="needs /proc")
def test_clients_opened_inside_a_running_loop_are_closed_with_it() -> None:
    import asyncio

    from copage.llm.runner import run_blocking

    with FakeServer(default=FakeReply(fixture("openai_chat_text.json"))) as srv:
        model = openai_model(srv)

        async def inside() -> int:
            before = len(os.listdir("/proc/self/fd"))
            for _ in range(20):
                run_blocking(model.complete(ChatRequest(USER)))  # a worker thread each time
            return len(os.listdir("/proc/self/fd")) - before

        assert asyncio.run(inside()) <= 3
