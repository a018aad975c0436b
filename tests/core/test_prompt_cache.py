"""stats().prompt_cache: the share of each request repeating the previous prefix, and cost."""

from __future__ import annotations

import statistics

import pytest

from copage import PagedMemory
from copage.core.promptcache import (
    MIN_CACHED,
    PRICES,
    PromptMeter,
    cached_tokens,
    common_prefix,
    render_request,
    request_cost,
)
from copage.core.tokens import get_tokenizer


def test_common_prefix() -> None:
    assert common_prefix("", "abc") == 0
    assert common_prefix("abc", "abc") == 3
    assert common_prefix("abcdef", "abcxef") == 3
    assert common_prefix("ab", "abcd") == 2
    assert common_prefix("x" * 5000 + "a", "x" * 5000 + "b") == 5000


def test_cached_tokens_follow_each_providers_rule() -> None:
    assert cached_tokens("gpt-4o-mini", 900, 900) == 0  # below the 1,024-token minimum
    assert cached_tokens("gpt-4o-mini", 5000, 1000) == 0
    assert cached_tokens("gpt-4o-mini", 5000, 1024 + 200) == 1024 + 128  # 128-token steps
    assert cached_tokens("claude-sonnet-4-5", 5000, 1300) == 1300
    # Anthropic: 0.1 per cached token read, 1.25 per token written; OpenAI: half price.
    assert request_cost("claude-haiku-4-5", 6000, 4500) == pytest.approx(
        (4500 * 0.10 + 1500 * 1.25) / 1e6)
    assert request_cost("gpt-4o-mini", 2000, 2000) == pytest.approx(
        (1920 * 0.075 + 80 * 0.15) / 1e6)
    assert request_cost("gpt-4o-mini", 500, 500) == pytest.approx(500 * 0.15 / 1e6)
    assert set(PRICES) == {"gpt-4o-mini", "claude-haiku-4-5", "claude-sonnet-4-5"}
    assert MIN_CACHED == 1024


def test_each_models_minimum_cacheable_length() -> None:
    """Haiku 4.5 caches no prefix shorter than 4,096 tokens (Sonnet 4.5: 1,024): a
    shorter breakpoint prefix is neither read nor written, all of it plain input."""
    assert PRICES["claude-haiku-4-5"].min_cached == 4096
    assert PRICES["claude-sonnet-4-5"].min_cached == 1024
    assert cached_tokens("claude-haiku-4-5", 5000, 3000) == 0
    assert request_cost("claude-haiku-4-5", 3500, 3000, 3000) == pytest.approx(3500 * 1.00 / 1e6)
    assert request_cost("claude-sonnet-4-5", 3500, 3000, 3000) == pytest.approx(
        (3000 * 0.30 + 500 * 3.00) / 1e6)
    assert request_cost("claude-haiku-4-5", 5000, 4200, 4500) == pytest.approx(
        (4200 * 0.10 + 300 * 1.25 + 500 * 1.00) / 1e6)


def _msgs(*texts: str) -> list[dict[str, str]]:
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)]


def test_anthropic_reads_a_cache_entry_only_whole() -> None:
    """Anthropic reads an earlier breakpoint prefix only when the request repeats all of
    it: a page dropped from the front (an eviction) reads nothing and writes the whole
    history again at 1.25x, though most of the prompt repeats token for token."""
    tok = get_tokenizer("o200k_base")
    big = [f"Message {i}: " + "the garden plan with tomatoes and basil " * 40 for i in range(8)]
    meter = PromptMeter(tok)
    meter.record(_msgs(*big[:5]), [], 0, 0)  # u a u a u: breakpoint after message 4
    c0 = meter.cost["claude-sonnet-4-5"]["paged_cached"]
    meter.record(_msgs(*big[:7]), [], 0, 0)  # appends: reads the entry whole
    grown = meter.cost["claude-sonnet-4-5"]["paged_cached"] - c0
    counts = [meter.part_tokens(m) for m in _msgs(*big[:7])]
    read, stable = sum(counts[:4]), sum(counts[:6])
    assert grown == pytest.approx((read * 0.30 + (stable - read) * 3.75 + counts[6] * 3.0) / 1e6)
    c1 = meter.cost["claude-sonnet-4-5"]["paged_cached"]
    meter.record(_msgs(*big[2:8], "q"), [], 0, 0)
    evicted = meter.cost["claude-sonnet-4-5"]["paged_cached"] - c1
    sent = _msgs(*big[2:8], "q")
    parts = [meter.part_tokens(m) for m in sent]
    assert evicted == pytest.approx((sum(parts[:6]) * 3.75 + parts[6] * 3.0) / 1e6)


def test_render_request_order() -> None:
    tools = [{"type": "function", "function": {"name": "recall"}}]
    text = render_request([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
                          tools)
    assert text.index("recall") < text.index("S") < text.index("U")


def chat(mem: PagedMemory, turns: int) -> list[float]:
    """User/assistant turns, a context() request before each answer; the shares seen."""
    shares: list[float] = []
    for i in range(turns):
        role = "user" if i % 2 == 0 else "assistant"
        mem.add(role, f"Turn {i}: the garden plan for week {i % 7}, tomatoes and basil {i}.")
        if role == "user":
            mem.context()
            pc = mem.stats().prompt_cache
            assert pc is not None
            shares.append(pc["prefix_share_last"])
    return shares


def test_prefix_share_and_costs_in_stats() -> None:
    # paged by page count (fixed_10, lru, k=4, batches of 2: the default before paging by
    # budget), so that 300 short turns are paged
    mem = PagedMemory(resident_pages=4)
    # pages of 10 turns (5 requests): the first eviction comes when page k + 1 closes
    first = 5 * (mem.config.resident_pages + 1)  # type: ignore[operator]
    assert mem.stats().prompt_cache == {
        "requests": 0, "prefix_share_median": None, "prefix_share_last": None,
        "prompt_tokens": 0, "prefix_tokens": 0, "full_tokens": 0, "last_prompt_tokens": 0,
        "cost_usd": {m: {"paged": 0.0, "paged_cached": 0.0, "full": 0.0, "full_cached": 0.0}
                     for m in PRICES}}
    shares = chat(mem, 300)
    pc = mem.stats().prompt_cache
    assert pc is not None and pc["requests"] == 150 and len(shares) == 150
    assert shares[0] == 0.0  # nothing before the first request
    # Requests between page closes only append a turn: the whole previous prompt repeats.
    assert statistics.median(shares) == pc["prefix_share_median"] >= 0.9
    assert all(shares[i] > shares[i - 1] for i in range(1, first))  # before the first eviction
    # The first eviction puts the tool schema and preamble first: nothing repeats. Later
    # eviction batches drop the oldest resident pages from the front: that request
    # shares little more than the system message.
    assert shares[first] == 0.0 and min(shares[first + 1:]) < 0.5
    assert 0 < pc["prefix_tokens"] < pc["prompt_tokens"] < pc["full_tokens"]
    for model, c in pc["cost_usd"].items():
        assert c["paged_cached"] <= c["paged"] < c["full"], model
        assert c["full_cached"] < c["full"], model
        # With caching priced in, paged costs less than full context with caching too
        # (Anthropic's tenfold cache discount needs the default eviction batches).
        assert c["paged_cached"] < c["full_cached"], model
    # Haiku 4.5 caches nothing under 4,096 tokens: a paged prompt this short is all input
    haiku = pc["cost_usd"]["claude-haiku-4-5"]
    assert haiku["paged_cached"] == haiku["paged"]
    assert mem.stats().to_dict()["prompt_cache"] == pc


def test_eviction_batches_keep_more_of_the_prefix() -> None:
    # paged by page count (k = 4), one page at a time or in the default batches of 2
    one, two = PagedMemory(evict_batch=1, resident_pages=4), PagedMemory(resident_pages=4)
    assert one.config.evict_batch == 1 and two.config.evict_batch == 2
    shares = [statistics.fmean(chat(mem, 300)) for mem in (one, two)]
    assert shares[1] > shares[0] + 0.03
    anthropic = [mem.stats().prompt_cache["cost_usd"]["claude-sonnet-4-5"]  # type: ignore[index]
                 for mem in (one, two)]
    assert anthropic[1]["paged_cached"] < anthropic[0]["paged_cached"]


def test_without_paging_the_prompt_is_the_whole_history() -> None:
    mem = PagedMemory()
    shares = chat(mem, 12)  # no page evicted: the conversation goes out as it is
    # Each request repeats the whole previous one: with n messages, (n - 2) / n of it.
    assert shares[1:] == pytest.approx([(n - 2) / n for n in (3, 5, 7, 9, 11)], abs=0.02)
    pc = mem.stats().prompt_cache
    # ... which is what full context sends: metered the same way, message framing included
    assert pc is not None and pc["prompt_tokens"] == pc["full_tokens"] > 0
    assert all(c["paged_cached"] == c["full_cached"] for c in pc["cost_usd"].values())


def test_full_context_is_rendered_like_the_paged_request() -> None:
    """Session headers and message framing count in full context as in the paged
    request (before, full context was the turn texts only: cheaper than what it sends)."""
    mem = PagedMemory()
    for i in range(14):
        role = "user" if i % 2 == 0 else "assistant"
        mem.add(role, f"Turn {i} about the garden.", speaker="Ann" if i % 2 == 0 else "Bob",
                session=i // 6, timestamp=f"{i // 6 + 1} May 2023")
        if role == "user":
            mem.context()
    pc = mem.stats().prompt_cache
    assert pc is not None and pc["prompt_tokens"] == pc["full_tokens"]
    mem.pager.pop_turn()  # the latest (user) turn goes, another comes: counted afresh
    mem.add("user", "Something else entirely, and longer than the turn it replaces.",
            speaker="Ann", session=2, timestamp="3 May 2023")
    before = mem.stats().prompt_cache["full_tokens"]  # type: ignore[index]
    mem.context()
    after = mem.stats().prompt_cache
    assert after is not None
    assert after["full_tokens"] - before == after["prompt_tokens"] - pc["prompt_tokens"]


def test_anthropic_cost_writes_only_the_history_before_its_breakpoint() -> None:
    """What follows the latest assistant message (a fill, the question) is plain input:
    copage's Anthropic client puts the cache breakpoint there, so it is never written."""
    # stable 1,500 of 2,000 tokens, 1,200 repeated: 1,200 read, 300 written, 500 input
    assert request_cost("claude-sonnet-4-5", 2000, 1200, 1500) == pytest.approx(
        (1200 * 0.30 + 300 * 3.75 + 500 * 3.00) / 1e6)
    assert request_cost("claude-sonnet-4-5", 2000, 2000, 900) == pytest.approx(2000 * 3.00 / 1e6)
    # OpenAI caches any prefix itself: the breakpoint does not matter
    assert request_cost("gpt-4o-mini", 2000, 2000, 10) == request_cost("gpt-4o-mini", 2000, 2000)


def test_the_meter_is_stored_with_the_conversation(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A conversation reopened from its SQLite file continues its prompt-cache count:
    the same figures as one that never closed, over the same turns (requests that only
    append, or change a message whole, are matched exactly from the stored digests)."""
    db = f"sqlite://{tmp_path / 'chat.db'}"
    kept = PagedMemory()  # never closed
    first = PagedMemory(store=db, conversation_id="c")
    chat(kept, 120)
    chat(first, 120)
    before = first.stats().prompt_cache
    assert before == kept.stats().prompt_cache and before["requests"] == 60
    first.store.close()
    again = PagedMemory(store=db, conversation_id="c")
    assert again.stats().prompt_cache == before  # not a new count
    for mem in (kept, again):
        for i in range(120, 200):
            mem.add("user" if i % 2 == 0 else "assistant", f"Turn {i}: plan {i % 7}, basil {i}.")
            if i % 2 == 0:
                mem.context()
    got, want = again.stats().prompt_cache, kept.stats().prompt_cache
    assert got["requests"] == want["requests"] == 100
    for key in ("prompt_tokens", "full_tokens"):
        assert got[key] == want[key], key
    # The one request after the reopen, if it changed the system message, does not get
    # credit for the changed message's repeated beginning: at most that much less.
    assert 0 <= want["prefix_tokens"] - got["prefix_tokens"] < 600
    assert abs(got["prefix_share_median"] - want["prefix_share_median"]) < 0.01
    for model, c in want["cost_usd"].items():
        for kind in ("paged", "full", "full_cached"):
            assert got["cost_usd"][model][kind] == pytest.approx(c[kind]), (model, kind)
        assert got["cost_usd"][model]["paged_cached"] == pytest.approx(
            c["paged_cached"], rel=0.02), model


def test_a_restored_meter_matches_appends_and_cache_entries_exactly() -> None:
    """From its stored form (JSON, digests only) a meter counts the following requests
    as the original does when each repeats earlier messages whole."""
    import json

    tok = get_tokenizer("o200k_base")
    big = [f"Message {i}: " + "the garden plan with tomatoes and basil " * 40 for i in range(9)]
    meter = PromptMeter(tok)
    meter.record(_msgs(*big[:3]), [], 3000, 10)
    meter.record(_msgs(*big[:5]), [], 5000, 10)
    stored = json.loads(json.dumps(meter.to_json()))
    assert big[0] not in json.dumps(stored)  # digests, not the conversation again
    restored = PromptMeter.from_json(tok, stored)
    assert restored.summary() == meter.summary()
    for sent in (_msgs(*big[:7]), _msgs(*big[2:8], "q"), _msgs(*big[:9])):
        meter.record(sent, [], 9000, 10)
        restored.record(sent, [], 9000, 10)
        assert restored.summary() == meter.summary()
    assert restored.to_json() == meter.to_json()
    assert PromptMeter.from_json(tok, None).summary() == PromptMeter(tok).summary()


@pytest.mark.parametrize("damage", [{"shares": "not base64!"}, {"shares": 7},
                                    {"entries": [[1, "x"]]}, {"requests": "many"}])
def test_a_damaged_stored_meter_starts_a_new_count(tmp_path, damage) -> None:  # type: ignore[no-untyped-def]
    """The meter only reports: a damaged stored count does not keep the conversation
    from loading, and every turn is still there."""
    from copage.core.changes import ChangeSet

    db = f"sqlite://{tmp_path / 'chat.db'}"
    mem = PagedMemory(store=db, conversation_id="c")
    chat(mem, 60)
    turns = len(mem.turns)
    stored = mem.store.load("c")
    state = dict(stored.state)
    state["prompt_meter"] = {**state["prompt_meter"], **damage}
    mem.store.commit("c", ChangeSet(state=state))
    mem.store.close()
    again = PagedMemory(store=db, conversation_id="c")
    assert len(again.turns) == turns
    assert again.stats().prompt_cache["requests"] == 0
    again.context()
    assert again.stats().prompt_cache["requests"] == 1
