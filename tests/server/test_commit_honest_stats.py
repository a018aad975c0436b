"""Honest figures through the proxy: ``X-Copage-Stats`` counts the request as it was sent
upstream (the speculative fill included), and the metrics with it."""

from __future__ import annotations

import json
from typing import Any

import httpx
from proxy_helpers import KEY_A, Proxy
from test_formats_chat_openai_sdk import FACTS, _chat

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


def test_inspector_says_whether_paging_has_saved_money(make_proxy: Any) -> None:
    proxy: Proxy = make_proxy(recall_mode="speculative")
    history: list[dict[str, Any]] = []
    for fact in [*FACTS, *FACTS]:
        _chat(proxy, history, fact)
    raw, _ = _chat(proxy, history, "Which city does my sister Marta live in?")
    conv = raw.headers["x-copage-conversation"]
    got = httpx.get(f"{proxy.url}/ui/api/conversations/{conv}",
                    headers={"authorization": f"Bearer {KEY_A}"}).json()["stats"]
    pc = got["prompt_cache"]
    assert set(got["savings"]) == set(pc["cost_usd"]) and pc["requests"] == len(FACTS) * 2 + 1
    for model, s in got["savings"].items():
        paged, full = pc["cost_usd"][model]["paged_cached"], pc["cost_usd"][model]["full_cached"]
        assert (s["paged_usd"], s["full_usd"]) == (paged, full)
        assert s["saved_usd"] == round(full - paged, 8) and s["saved"] == (full > paged)
