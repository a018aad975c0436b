"""Spec parsing, the provider registry, keys, and the network-forbid switch."""

from __future__ import annotations

import socket
import time

import pytest

from copage.core.registry import UnknownNameError
from copage.llm import (
    AuthError,
    ChatRequest,
    NetworkForbidden,
    ScriptedModel,
    check_url,
    forbid_network,
    get_model,
    network_forbidden,
    parse_spec,
)
from copage.llm.adapter import DUMMY_KEY

USER = ({"role": "user", "content": "hi"},)


def test_parse_spec_forms() -> None:
    s = parse_spec("openai:deepseek-chat@https://api.deepseek.com/v1")
    assert (s.provider, s.model, s.base_url, s.tool_protocol) == (
        "openai",
        "deepseek-chat",
        "https://api.deepseek.com/v1",
        "native",
    )
    s = parse_spec("openai:llama3:8b@http://127.0.0.1:11434/v1#text")
    assert (s.model, s.base_url, s.tool_protocol) == (
        "llama3:8b",
        "http://127.0.0.1:11434/v1",
        "text",
    )
    assert parse_spec("openrouter:anthropic/claude-haiku-4.5").model == "anthropic/claude-haiku-4.5"
    assert parse_spec("openai:claude@2024").model == "claude@2024"
    with pytest.raises(ValueError, match="expected provider:MODEL"):
        parse_spec("gpt-4o-mini")
    with pytest.raises(ValueError, match="#native or #text"):
        parse_spec("openai:x#fast")


def test_unknown_provider_lists_valid() -> None:
    with pytest.raises(UnknownNameError, match="valid model providers: anthropic, deepseek, glm"):
        get_model("nope:model")


def test_shortcuts_set_base_url_and_key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("DEEPSEEK_API_KEY", "OPENROUTER_API_KEY", "ZHIPUAI_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-000000000")
    m = get_model("deepseek:deepseek-chat")
    assert m.base_url == "https://api.deepseek.com/v1" and m.spec == "deepseek:deepseek-chat"  # type: ignore[attr-defined]
    assert m.null_content is True  # type: ignore[attr-defined]
    with pytest.raises(AuthError, match="ZHIPUAI_API_KEY"):
        get_model("glm:glm-5")
    with pytest.raises(AuthError, match="OPENROUTER_API_KEY"):
        get_model("openrouter:openai/gpt-4o-mini")
    with pytest.raises(AuthError, match="OPENAI_API_KEY"):
        get_model("openai:gpt-4o-mini")
    with pytest.raises(AuthError, match="ANTHROPIC_API_KEY"):
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
        get_model("anthropic:claude-haiku-4-5")


def test_local_server_gets_dummy_key_and_empty_content(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    m = get_model("openai:local@http://127.0.0.1:8080/v1")
    assert m._api_key() == DUMMY_KEY and m.null_content is False  # type: ignore[attr-defined]
    assert repr(m) == "OpenAIModel('openai:local@http://127.0.0.1:8080/v1')"


def test_key_not_in_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-9999999999")
    m = get_model("openai:gpt-4o-mini", max_concurrency=2)
    assert "sk-live" not in repr(m) and "sk-live" not in m.spec
    assert "sk-live" not in str(vars(m)) and "sk-live" not in str(vars(m.inner))  # type: ignore[attr-defined]


async def test_forbidden_host_raises_without_connecting(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[object] = []

    def no_dns(*a: object, **k: object) -> object:
        attempts.append(a)
        raise AssertionError("DNS lookup attempted")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    monkeypatch.setattr(socket.socket, "connect", no_dns)
    for spec in ("openai:gpt-4o-mini@https://api.example.com/v1", "anthropic:claude-haiku-4-5"):
        m = get_model(spec, api_key="sk-x-000000")
        t0 = time.perf_counter()
        with pytest.raises(NetworkForbidden, match="forbidden"):
            await m.complete(ChatRequest(USER))
        assert time.perf_counter() - t0 < 2.0  # no retry backoff (those sleeps add seconds)
    assert attempts == []


def test_switch_forms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COPAGE_FORBID_NETWORK_MODELS")
    assert not network_forbidden()
    check_url("https://api.openai.com/v1", "openai")  # allowed
    with forbid_network():
        assert network_forbidden()
        check_url("http://localhost:8080/v1", "openai")
        check_url("http://[::1]:8080/v1", "openai")
        with pytest.raises(NetworkForbidden):
            check_url("http://10.0.0.5:8080/v1", "openai")
    with forbid_network(allow_loopback=False), pytest.raises(NetworkForbidden):
        check_url("http://127.0.0.1:8080/v1", "openai")
    monkeypatch.setenv("COPAGE_FORBID_NETWORK_MODELS", "all")
    with pytest.raises(NetworkForbidden):
        check_url("http://127.0.0.1:8080/v1", "openai")


async def test_scripted_model_records_and_runs_out() -> None:
    m = get_model("scripted:bot")
    assert isinstance(m, ScriptedModel)
    m.tool_call("recall", {"page": "p3"}).reply("done", logprobs=[-0.1]).then(
        lambda req: f"saw {len(req.messages)} messages"
    )
    r1 = await m.complete(ChatRequest(USER))
    r2 = await m.complete(ChatRequest(USER))
    r3 = await m.complete(ChatRequest(USER * 3))
    assert r1.tool_calls[0].name == "recall" and r1.tool_calls[0].arguments == '{"page": "p3"}'
    assert r2.text == "done" and r2.logprobs == [-0.1] and r3.text == "saw 3 messages"
    assert len(m.requests) == 3
    with pytest.raises(Exception, match="script exhausted after 3 replies"):
        await m.complete(ChatRequest(USER))
