"""Load and latency of ``copage serve`` on loopback (bounded; 127.0.0.1 only).

For each store (SQLite, PostgreSQL) and worker count (1, 2): 200 conversations x
20 turns driven by 50 concurrent clients against a scripted upstream that answers
at once and asks for a recall on some turns, with settings that evict pages.
Each client interleaves a direct request to the upstream before each proxied
turn, so both latency distributions come from the same run. Then, for turns
without a recall, one client sends requests one after another (direct and proxied
alternating) to measure the added latency without load.

    python bench/bench_proxy.py [--conversations 200] [--turns 20] [--clients 50]
        [--postgres postgresql://postgres@127.0.0.1:5432/test] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

import httpx

PAGING = ("--boundary", "fixed_4", "-k", "2")
DEADLINE_S = 900.0  # the whole run stops by itself after this


def upstream_main(port: int) -> None:
    """The scripted upstream (run in its own process): recall on 'RECALL', else echo."""
    from copage.server.testing import FakeUpstream, Reply, echo

    def respond(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply(text="answer from the recalled page")
        if "RECALL" in (last.get("content") or "") and body.get("tools"):
            return Reply(tool_calls=[("recall", {"page": "p1"})])
        return echo(body)

    FakeUpstream(respond, record=False, port=port).start()._thread.join()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: process exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))] * 1000.0


def summary(direct: list[float], proxied: list[float]) -> dict[str, float]:
    return {
        "direct_p50_ms": pct(direct, 0.5), "direct_p99_ms": pct(direct, 0.99),
        "proxied_p50_ms": pct(proxied, 0.5), "proxied_p99_ms": pct(proxied, 0.99),
        "added_p50_ms": pct(proxied, 0.5) - pct(direct, 0.5),
        "added_p99_ms": pct(proxied, 0.99) - pct(direct, 0.99),
    }


async def load(proxy: str, upstream: str, n_conv: int, turns: int, clients: int) -> dict[str, Any]:
    """n_conv conversations x turns, ``clients`` at once; direct and proxied interleaved."""
    direct: list[float] = []
    proxied: list[float] = []
    errors: list[str] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(n_conv):
        queue.put_nowait(i)
    run = uuid.uuid4().hex[:8]
    limits = httpx.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)

    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        async def client() -> None:
            while not queue.empty():
                conv = queue.get_nowait()
                cid = f"bench-{run}-{conv}"
                for t in range(turns):
                    text = f"turn {t} of conversation {conv}: the code word is w{conv}x{t}"
                    if t >= 8 and t % 5 == 0:
                        text += " RECALL"
                    body = {"model": "fake", "messages": [{"role": "user", "content": text}]}
                    side = "direct"
                    try:
                        t0 = time.perf_counter()
                        r = await http.post(f"{upstream}/chat/completions", json=body)
                        direct.append(time.perf_counter() - t0)
                        side = "proxied"
                        t0 = time.perf_counter()
                        r2 = await http.post(f"{proxy}/v1/chat/completions", json=body,
                                             headers={"X-Copage-Conversation": cid})
                        proxied.append(time.perf_counter() - t0)
                    except httpx.HTTPError as e:
                        errors.append(f"{side} {type(e).__name__}: {e}")
                        continue
                    if r.status_code != 200 or r2.status_code != 200:
                        errors.append(f"{r.status_code}/{r2.status_code}: {r2.text[:200]}")

        t0 = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        wall = time.perf_counter() - t0
    return {"requests": len(proxied), "errors": len(errors), "error_samples": errors[:3],
            "wall_s": wall, "throughput_rps": len(proxied) / wall, **summary(direct, proxied)}


def sequential(proxy: str, upstream: str, n: int) -> dict[str, Any]:
    """One client, no recalls: alternate direct and proxied requests."""
    direct: list[float] = []
    proxied: list[float] = []
    cid = f"seq-{uuid.uuid4().hex[:8]}"
    with httpx.Client(timeout=30) as http:
        for t in range(5):  # warm-up (first use loads the tokenizer and opens connections)
            http.post(f"{proxy}/v1/chat/completions", headers={"X-Copage-Conversation": cid},
                      json={"model": "fake", "messages": [{"role": "user", "content": "warm"}]})
        for t in range(n):
            body = {"model": "fake", "messages": [{"role": "user", "content": f"plain turn {t}"}]}
            t0 = time.perf_counter()
            http.post(f"{upstream}/chat/completions", json=body)
            direct.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            r = http.post(f"{proxy}/v1/chat/completions", json=body,
                          headers={"X-Copage-Conversation": f"{cid}-{t // 20}"})
            proxied.append(time.perf_counter() - t0)
            assert r.status_code == 200, r.text
    return {"requests": n, **summary(direct, proxied)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--conversations", type=int, default=200)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--sequential", type=int, default=400)
    ap.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--stores", default="sqlite,postgres")
    ap.add_argument("--json", help="write results here")
    ap.add_argument("--upstream-server", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.upstream_server:
        upstream_main(args.upstream_server)
        return 0
    started = time.monotonic()
    up_port = free_port()
    up_proc = subprocess.Popen([sys.executable, __file__, "--upstream-server", str(up_port)])
    upstream = f"http://127.0.0.1:{up_port}/v1"
    results: list[dict[str, Any]] = []
    try:
        wait_up(f"{upstream}/models", up_proc)
        tmp = tempfile.mkdtemp(prefix="copage-bench-")
        for store_kind in args.stores.split(","):
            for workers in [int(w) for w in args.workers.split(",")]:
                if time.monotonic() - started > DEADLINE_S:
                    print("deadline reached; stopping", file=sys.stderr)
                    break
                schema = f"copage_bench_{uuid.uuid4().hex[:8]}"
                store = (f"sqlite://{tmp}/{store_kind}-{workers}.db" if store_kind == "sqlite"
                         else f"{args.postgres}?schema={schema}")
                port = free_port()
                proc = subprocess.Popen(
                    [sys.executable, "-m", "copage.cli.main", "serve", "--upstream", upstream,
                     "--store", store, "--port", str(port), "--workers", str(workers),
                     "--log-level", "warning", *PAGING],
                    env={**os.environ, "COPAGE_KEYS": ""}, stderr=subprocess.DEVNULL,
                )
                proxy = f"http://127.0.0.1:{port}"
                try:
                    wait_up(f"{proxy}/healthz", proc)
                    seq = sequential(proxy, upstream, args.sequential)
                    res = asyncio.run(load(proxy, upstream, args.conversations, args.turns,
                                           args.clients))
                finally:
                    proc.terminate()
                    proc.wait(20)
                    if store_kind == "postgres":
                        import psycopg

                        with psycopg.connect(args.postgres, autocommit=True) as c:
                            c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                row = {"store": store_kind, "workers": workers, "sequential": seq, "load": res}
                results.append(row)
                print(json.dumps(row), flush=True)
    finally:
        up_proc.terminate()
        up_proc.wait(10)
    print("\n| store | workers | seq added p50 | seq added p99 | load direct p50/p99 | "
          "load proxied p50/p99 | load added p50/p99 | throughput | errors |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        s, ld = r["sequential"], r["load"]
        print(f"| {r['store']} | {r['workers']} | {s['added_p50_ms']:.1f} ms | "
              f"{s['added_p99_ms']:.1f} ms | {ld['direct_p50_ms']:.1f} / {ld['direct_p99_ms']:.1f} ms"
              f" | {ld['proxied_p50_ms']:.1f} / {ld['proxied_p99_ms']:.1f} ms | "
              f"{ld['added_p50_ms']:.1f} / {ld['added_p99_ms']:.1f} ms | "
              f"{ld['throughput_rps']:.0f} req/s | {ld['errors']} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if any(r["load"]["errors"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
