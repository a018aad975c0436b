"""Backoff, Retry-After parsing, prices, the usage meter, bounded concurrency, sync helper."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from pathlib import Path

import pytest

from copage.llm import (
    BoundedModel,
    ChatRequest,
    ChatResponse,
    RateLimited,
    RetryPolicy,
    ScriptedModel,
    Usage,
    UsageMeter,
    complete_sync,
    cost_of,
    price_of,
    register_price,
)
from copage.llm.errors import AuthError, redact
from copage.llm.retry import call_with_retries, parse_retry_after

from .conftest import Sleeps

USER = ({"role": "user", "content": "hi"},)


def test_full_jitter_bounds() -> None:
    p = RetryPolicy(base_delay=1.0, max_delay=5.0, rng=random.Random(0))
    for attempt in range(6):
        cap = min(5.0, 2.0**attempt)
        draws = [p.delay(attempt) for _ in range(200)]
        assert all(0 <= d <= cap for d in draws) and max(draws) > cap * 0.8
    assert p.delay(0, retry_after=3.0) == 3.0 and p.delay(0, retry_after=99.0) == 5.0


def test_parse_retry_after() -> None:
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (parse_retry_after({"Retry-After": date}) or 0) <= 30
    assert parse_retry_after({"retry-after": "soon"}) is None and parse_retry_after({}) is None


@pytest.mark.parametrize("headers, expected", [
    ({"Retry-After": "inf"}, None), ({"Retry-After": "nan"}, None),
    ({"retry-after-ms": "1e400"}, None), ({"retry-after-ms": "inf", "retry-after": "4"}, 4.0),
    ({"Retry-After": "1e300"}, 86400.0), ({"Retry-After": "-3"}, 0.0),
])
def test_parse_retry_after_rejects_non_finite_and_clamps(
    headers: dict[str, str], expected: float | None,
) -> None:
    value = parse_retry_after(headers)
    assert value == expected
    if value is not None:
        int(value)  # the proxy's error handler turns it into a header


async def test_retry_loop(sleeps: Sleeps) -> None:
    tries = 0

    async def flaky() -> str:
        nonlocal tries
        tries += 1
        if tries < 3:
            raise RateLimited("p", "slow", status=429)
        return "ok"

    assert await call_with_retries(flaky, RetryPolicy(sleep=sleeps)) == "ok"
    assert tries == 3 and len(sleeps.delays) == 2

    async def denied() -> str:
        raise AuthError("p", "no", status=401)

    with pytest.raises(AuthError):
        await call_with_retries(denied, RetryPolicy(sleep=sleeps))
    assert len(sleeps.delays) == 2


def test_redact() -> None:
    assert redact("bad key sk-abcdefgh12345678 here", None) == "bad key *** here"
    assert "mysecretvalue" not in redact("x mysecretvalue y", "mysecretvalue")


def test_prices(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert cost_of("gpt-4o-mini", Usage(1_000_000, 1_000_000)) == pytest.approx(0.75)
    assert price_of("gpt-4o-mini-2024-07-18") == price_of("gpt-4o-mini")
    assert price_of("deepseek/deepseek-chat") == price_of("deepseek-chat")
    assert cost_of("my-local-model", Usage(10, 10)) is None
    register_price("my-local-model", 1.0, 2.0)
    assert cost_of("my-local-model", Usage(1_000_000, 500_000)) == pytest.approx(2.0)
    prices = tmp_path / "p.json"
    prices.write_text(json.dumps({"glm-5": [9, 9], "other": {"input": 1, "output": 1}}))
    monkeypatch.setenv("COPAGE_PRICES", str(prices))
    assert cost_of("glm-5", Usage(1_000_000, 0)) == pytest.approx(9.0)
    prices.write_text("{bad")
    monkeypatch.setenv("COPAGE_PRICES", str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="COPAGE_PRICES"):
        cost_of("glm-5", Usage(1, 1))


def test_meter() -> None:
    meter = UsageMeter()
    meter.record(ChatResponse("a", usage=Usage(10, 5), cost_usd=0.5))
    meter.record(ChatResponse("b", usage=Usage(10, 5), cost_usd=None))
    meter.record(ChatResponse("c", usage=Usage(10, 5), cost_usd=0.25, cached=True))
    t = meter.totals()
    assert (t.calls, t.cache_hits, t.prompt_tokens, t.completion_tokens) == (3, 1, 20, 10)
    assert (t.cost_usd, t.saved_usd, t.unpriced_calls) == (0.5, 0.25, 1)


async def test_bounded_concurrency() -> None:
    in_flight = peak = 0

    class Slow:
        name, spec = "slow", "test:slow"

        async def complete(self, request: ChatRequest) -> ChatResponse:
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1
            return ChatResponse("ok")

    model = BoundedModel(Slow(), 3)
    await asyncio.gather(*(model.complete(ChatRequest(USER)) for _ in range(12)))
    assert peak == 3
    with pytest.raises(ValueError, match="max_concurrency"):
        BoundedModel(Slow(), 0)


def test_complete_sync() -> None:
    m = ScriptedModel().reply("one").reply("two")
    assert complete_sync(m, list(USER)).text == "one"
    assert complete_sync(m, ChatRequest(USER)).text == "two"


async def test_complete_sync_inside_loop_fails_clearly() -> None:
    with pytest.raises(RuntimeError, match="use 'await'"):
        complete_sync(ScriptedModel().reply("x"), ChatRequest(USER))


def test_request_validation() -> None:
    with pytest.raises(ValueError, match="at least one message"):
        ChatRequest(())
    with pytest.raises(ValueError, match="'role'"):
        ChatRequest(({"content": "x"},))


def test_prompt_cache_tokens_are_billed_at_their_price() -> None:
    """A call whose prompt was partly read from (or written to) the provider's cache
    costs what the vendor bills: OpenAI's cached input at half price on gpt-4o-mini;
    Anthropic's ``input_tokens`` leaves out the cache read and write tokens, which cost
    0.1x and 1.25x input (before, Anthropic's prompt was undercounted and both were
    billed at the plain input price)."""
    from copage.llm.anthropic_convert import from_anthropic
    from copage.llm.openai_parse import Accumulator
    from copage.llm.responses_model import from_response

    acc = Accumulator("openai", "gpt-4o-mini")
    acc.feed({"model": "gpt-4o-mini", "choices": [{"message": {"content": "hi"},
                                                     "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 2000, "completion_tokens": 10,
                        "prompt_tokens_details": {"cached_tokens": 1536}}}, whole=True)
    r = acc.response()
    assert (r.usage.prompt_tokens, r.usage.cached_tokens) == (2000, 1536)
    assert r.cost_usd == pytest.approx((464 * 0.15 + 1536 * 0.075 + 10 * 0.60) / 1e6)

    r = from_anthropic({"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
                        "usage": {"input_tokens": 50, "output_tokens": 10,
                                  "cache_read_input_tokens": 5000,
                                  "cache_creation_input_tokens": 300}},
                       "anthropic", "claude-haiku-4-5", None)
    assert (r.usage.prompt_tokens, r.usage.cached_tokens, r.usage.cache_write_tokens) == (
        5350, 5000, 300)
    assert r.cost_usd == pytest.approx((50 * 1.00 + 5000 * 0.10 + 300 * 1.25 + 10 * 5.00) / 1e6)

    r = from_response({"output": [{"type": "message", "content": [
                          {"type": "output_text", "text": "hi"}]}], "status": "completed",
                       "usage": {"input_tokens": 2000, "output_tokens": 0,
                                 "input_tokens_details": {"cached_tokens": 1024}}},
                      "openai", "gpt-4o-mini", None)
    assert r.cost_usd == pytest.approx((976 * 0.15 + 1024 * 0.075) / 1e6)
    # a model without a cache price bills cached tokens as input; a replayed response
    # keeps its cache counts
    register_price("cacheless-model", 1.0, 0.0)
    assert cost_of("cacheless-model", Usage(1000, 0, 600, 100)) == pytest.approx(1000 / 1e6)
    assert ChatResponse.from_json(r.to_json()).usage == r.usage
