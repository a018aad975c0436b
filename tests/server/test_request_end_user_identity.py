"""Two end users of one tenant sending the same exchanges through a plain HTTP client (no
SDK retry header) are kept apart by any identity the format carries: Chat Completions'
``user`` or ``safety_identifier``, the Responses API's, Anthropic's ``metadata.user_id``
or the ``X-Copage-User`` header. Before, the second got the first's stored answer and was
bound to the first's conversation."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from proxy_helpers import KEY_A, Proxy

HEAD = {"Authorization": f"Bearer {KEY_A}"}


def _send(proxy: Proxy, kind: str, who: str, history: list[dict[str, str]]) -> str:
    """One turn of ``history`` (the whole of it, resent) as ``who``; the answer text."""
    headers = dict(HEAD)
    body: dict[str, Any]
    if kind == "header":
        headers["X-Copage-User"] = who
    if kind in ("user", "safety_identifier", "header"):
        body = {"model": "m", "messages": history}
        if kind != "header":
            body[kind] = who
        r = httpx.post(f"{proxy.url}/v1/chat/completions", json=body, headers=headers)
        assert r.status_code == 200, r.text
        return str(r.json()["choices"][0]["message"]["content"])
    if kind == "responses":
        body = {"model": "m", "input": history, "safety_identifier": who}
        r = httpx.post(f"{proxy.url}/v1/responses", json=body, headers=headers)
        assert r.status_code == 200, r.text
        return str(r.json()["output"][0]["content"][0]["text"])
    body = {"model": "m", "max_tokens": 50, "messages": history, "metadata": {"user_id": who}}
    r = httpx.post(f"{proxy.url}/v1/messages", json=body,
                   headers={"x-api-key": KEY_A, "anthropic-version": "2023-06-01"})
    assert r.status_code == 200, r.text
    return str(r.json()["content"][0]["text"])


@pytest.mark.parametrize("kind", ["user", "safety_identifier", "header", "responses",
                                  "messages"])
def test_two_users_with_one_first_message(proxy: Proxy, kind: str) -> None:
    histories: dict[str, list[dict[str, str]]] = {"ann": [], "bob": []}
    for turn in ("hello", "what is the time?", "thanks"):
        for who, history in histories.items():
            history.append({"role": "user", "content": turn})
            n = len(proxy.upstream.received)
            history.append({"role": "assistant", "content": _send(proxy, kind, who, history)})
            assert len(proxy.upstream.received) == n + 1, f"{who}'s turn was answered"
    convs = proxy.state.store.list_conversations(tenant="alice")
    assert sorted(c.turns for c in convs) == [6, 6], "one conversation each, no fork"
