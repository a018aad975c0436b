"""Honest figures through the proxy: ``X-Copage-Stats`` counts the request as it was sent
upstream (the speculative fill included), and the metrics with it."""

from __future__ import annotations

import json
from typing import Any

from conftest import Proxy
from test_proxy_openai import FACTS, _chat

from copage.core.promptcache import PromptMeter
from copage.core.tokens import get_tokenizer


def _as_metered(sent: dict[str, Any]) -> int:
    """Tokens of one upstream request body, rendered as copage's prompt meter reads it."""
    meter = PromptMeter(get_tokenizer())
    meter.record(sent["messages"], sent.get("tools") or [], 0, 0)
    return meter.prompt_tokens


def test_stats_header_counts_the_fill_it_sent(make_proxy: Any) -> None:
    proxy: Proxy = make_proxy(recall_mode="speculative")
    history: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    for fact in FACTS:
        _chat(proxy, history, fact)
    raw, _ = _chat(proxy, history, "Which city does my sister Marta live in?")
    stats = json.loads(raw.headers["x-copage-stats"])
    assert stats["filled"]  # this turn showed an evicted page
    sent = proxy.upstream.received[-1]
    fill = sent["messages"][-2]["content"]
    assert "Marta lives in Lisbon" in fill
    assert stats["prompt_tokens"] == _as_metered(sent)
    without = {**sent, "messages": [*sent["messages"][:-2], sent["messages"][-1]]}
    assert stats["prompt_tokens"] > _as_metered(without)  # the fill is counted
    # the whole conversation, rendered the same way, is the comparison
    assert stats["full_tokens"] >= _as_metered({"messages": [m for m in history
                                                             if m["role"] != "system"]}) - 50
    metrics = proxy.state.metrics
    assert metrics.value("copage_prompt_tokens_sent_total") == metrics.value(
        "copage_prompt_cache_prompt_tokens_total")  # every turn counted as sent


def test_stats_header_without_a_fill_counts_the_request(make_proxy: Any) -> None:
    proxy: Proxy = make_proxy(recall_mode="speculative")
    history: list[dict[str, Any]] = []
    raw, _ = _chat(proxy, history, "Hello there, how are you today?")
    stats = json.loads(raw.headers["x-copage-stats"])
    assert stats["filled"] == []
    assert stats["prompt_tokens"] == _as_metered(proxy.upstream.received[-1]) > 0
