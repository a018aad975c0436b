"""The SQLite response cache and the CachedModel wrapper."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from copage.llm import (
    CachedModel,
    ChatRequest,
    ChatResponse,
    ResponseCache,
    ScriptedModel,
    UsageMeter,
    get_model,
    request_key,
    stream,
)
from copage.llm.response_cache import default_cache_path

USER = ({"role": "user", "content": "hello"},)


class Counting:
    """A fake model that counts calls."""

    name = "counting"
    spec = "test:counting"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        return ChatResponse(text=f"reply {self.calls}", cost_usd=0.01, model="counting")


async def test_identical_requests_hit_once(tmp_path: Path) -> None:
    inner = Counting()
    model = CachedModel(inner, ResponseCache(tmp_path / "c.sqlite"))
    a = await model.complete(ChatRequest(USER, temperature=0.0))
    b = await model.complete(ChatRequest(USER, temperature=0.0))
    assert inner.calls == 1
    assert (a.cached, b.cached) == (False, True) and b.text == a.text == "reply 1"
    c = await model.complete(ChatRequest(USER, temperature=0.7))
    assert inner.calls == 2 and not c.cached


async def test_persists_across_instances_and_meter(tmp_path: Path) -> None:
    inner = Counting()
    await CachedModel(inner, ResponseCache(tmp_path / "c.sqlite")).complete(ChatRequest(USER))
    meter = UsageMeter()
    again = get_model("scripted:x", cache=tmp_path / "c.sqlite", meter=meter)
    # a different spec is a different key: the scripted model must answer
    with pytest.raises(Exception, match="script exhausted"):
        await again.complete(ChatRequest(USER))
    same = CachedModel(inner, ResponseCache(tmp_path / "c.sqlite"))
    resp = await same.complete(ChatRequest(USER))
    meter.record(resp)
    assert inner.calls == 1 and resp.cached
    assert meter.totals().cache_hits == 1 and meter.totals().saved_usd == pytest.approx(0.01)


def test_key_covers_every_field() -> None:
    base = ChatRequest(USER)
    keys = {
        request_key("a:m", base),
        request_key("a:n", base),
        request_key("a:m", ChatRequest(USER, max_tokens=5)),
        request_key("a:m", ChatRequest(USER, logprobs=True)),
        request_key("a:m", ChatRequest(USER, tool_choice="auto")),
        request_key(
            "a:m", ChatRequest(USER, tools=({"type": "function", "function": {"name": "f"}},))
        ),
        request_key("a:m", ChatRequest(USER, extra={"seed": 1})),
        request_key("a:m", ChatRequest(({"role": "user", "content": "hello!"},))),
    }
    assert len(keys) == 8
    assert request_key("a:m", base) == request_key("a:m", ChatRequest([dict(USER[0])]))


async def test_disabled_cache_calls_through(tmp_path: Path) -> None:
    inner = Counting()
    model = CachedModel(inner, ResponseCache(tmp_path / "c.sqlite"), enabled=False)
    await model.complete(ChatRequest(USER))
    await model.complete(ChatRequest(USER))
    assert inner.calls == 2 and len(model.cache) == 0


async def test_corrupt_entry_is_ignored_with_warning(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    inner = Counting()
    model = CachedModel(inner, ResponseCache(path))
    await model.complete(ChatRequest(USER))
    db = sqlite3.connect(path)
    db.execute("UPDATE responses SET response = '{not json'")
    db.commit()
    db.close()
    with pytest.warns(RuntimeWarning, match="corrupt cache entry"):
        resp = await model.complete(ChatRequest(USER))
    assert inner.calls == 2 and not resp.cached
    assert (await model.complete(ChatRequest(USER))).cached  # overwritten with a good entry


def test_concurrent_writers(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"

    def writer(n: int) -> None:
        cache = ResponseCache(path)
        for i in range(40):
            cache.put(f"{n}-{i}", "s", ChatResponse(text=f"{n}-{i}"))
        cache.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cache = ResponseCache(path)
    assert len(cache) == 240
    hit = cache.get("5-39")
    assert hit is not None and hit.text == "5-39"
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_stream_miss_then_hit(tmp_path: Path) -> None:
    inner = ScriptedModel().reply("streamed")
    model = CachedModel(inner, ResponseCache(tmp_path / "c.sqlite"))
    first = [e async for e in stream(model, ChatRequest(USER))]
    second = [e async for e in stream(model, ChatRequest(USER))]
    assert first[-1].response is not None and not first[-1].response.cached
    assert second[-1].response is not None and second[-1].response.cached
    assert [e.text for e in second if e.kind == "text"] == ["streamed"]
    assert len(inner.requests) == 1


def test_default_path_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("COPAGE_CACHE_DIR", str(tmp_path))
    assert default_cache_path() == tmp_path / "responses.sqlite"
    monkeypatch.delenv("COPAGE_CACHE_DIR")
    assert default_cache_path().parts[-3:] == (".cache", "copage", "responses.sqlite")


def test_unserialisable_request_fails_clearly() -> None:
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        request_key("a:m", ChatRequest(USER, extra={"x": object()}))


async def test_concurrent_identical_requests_in_loop(tmp_path: Path) -> None:
    inner = Counting()
    model = CachedModel(inner, ResponseCache(tmp_path / "c.sqlite"))
    await asyncio.gather(*(model.complete(ChatRequest(USER, max_tokens=i % 3)) for i in range(9)))
    assert inner.calls == 3 and len(model.cache) == 3
