"""Cache hit vs a call to a local OpenAI-compatible server (median microseconds).

Run: .venv/bin/python bench/bench_llm_cache.py [--n 200]
The "server" is copage's scripted fake server on 127.0.0.1, driven through the
official openai SDK, so the figure is the client + loopback HTTP overhead, a
lower bound on any real model call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from copage.llm import CachedModel, ChatRequest, ResponseCache, get_model
from copage.llm.fake_server import FakeReply, FakeServer

REPLY = {
    "id": "chatcmpl-bench",
    "object": "chat.completion",
    "created": 0,
    "model": "bench",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
}


async def main(n: int) -> None:
    messages = tuple({"role": "user", "content": f"turn {i} " * 20} for i in range(40))
    request = ChatRequest(messages, temperature=0.0)
    with FakeServer(default=FakeReply(REPLY)) as srv, tempfile.TemporaryDirectory() as tmp:
        model = get_model(f"openai:bench@{srv.url}")
        cached = CachedModel(model, ResponseCache(Path(tmp) / "bench.sqlite"))
        await cached.complete(request)  # warm: fills the cache, imports the SDK
        calls, hits = [], []
        for _ in range(n):
            t0 = time.perf_counter()
            await model.complete(request)
            calls.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            resp = await cached.complete(request)
            hits.append(time.perf_counter() - t0)
            assert resp.cached
        upstream = len(srv.received)
    hit_us = statistics.median(hits) * 1e6
    call_us = statistics.median(calls) * 1e6
    print(f"requests: {n}, request size: {len(messages)} messages")
    print(f"cache hit       median {hit_us:9.1f} us")
    print(f"local server    median {call_us:9.1f} us  ({call_us / hit_us:.0f}x slower)")
    print(f"upstream calls: {upstream} (= {n} uncached + 1 warm-up miss)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    asyncio.run(main(parser.parse_args().n))
