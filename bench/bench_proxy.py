"""Load and latency of ``copage serve`` on loopback (bounded; 127.0.0.1 only).

For each store (SQLite, PostgreSQL) and worker count (1, 2): 200 conversations x
20 turns driven by 50 concurrent clients against a scripted upstream that answers
at once and asks for a recall on some turns, with settings that evict pages.
Each client interleaves a direct request to the upstream before each proxied
turn, so both latency distributions come from the same run. Then, for turns
without a recall, one client sends requests one after another (direct and proxied
alternating) to measure the added latency without load.

``--shape full`` measures instead what an OpenAI client does: one keep-alive
client holding one conversation that resends the whole history (its own
messages and every answer) on every turn, to the proxy and, right before, the
same body directly to the upstream. The added latency (proxied minus direct, per
turn pair) is reported for the turns ``T .. T+window-1`` for each T of
``--at`` (10, 200, 800), in header mode (``X-Copage-Conversation``) and in
transparent mode (no header), for each store (``sqlite-full``: SQLite with
``synchronous=FULL``, an fsync per commit as PostgreSQL does); ``--litellm PATH`` runs LiteLLM's
proxy (``PATH`` is its ``litellm`` executable; no database, no callbacks) in front of
the same upstream with the same client, and ``--litellm-hook`` adds LiteLLM with
copage's hook (``copage.adapters.litellm``: LiteLLM's proxy paging each request into a
SQLite store, the conversation named by the header), so the hook's own cost is the
difference between those two rows.
Every system runs once per round, ``--repeat`` rounds; each reported figure is
the median over the rounds (the machine is shared: load changes hit all systems).
With ``--shape full`` each row also reports the proxy process's own CPU time
per turn in each window (``cpu_ms``: the sum over its threads of the time on a CPU;
LiteLLM's too, whose threads run copage's hook), from Linux's ``/proc/PID/task/*/schedstat``, so it counts the proxy's work and not
its waiting; far less sensitive to a loaded machine than the latencies).
``--interleave`` drives instead one conversation per point of ``--at`` in the same
proxy, each grown to its point first, then their measured turns alternating (turn
10 of one, turn 800 of the other, ...): a load change of the shared machine then hits
every point alike and the ratio of two points comes from one run.

``--stream`` measures time to first token: one client sends streamed requests
(``"stream": true``), alternately straight to the upstream and through the proxy
(header mode, SQLite), and times the first non-empty ``delta.content`` and the
last byte of each. The upstream streams a ``--words``-word answer, one word per
chunk, ``--chunk-delay`` seconds apart (its first chunk, the role, at once); asked
without ``stream`` it sends the same answer whole after as long (so a proxy that
does not stream from its upstream shows its first token at the whole answer's time).

    python bench/bench_proxy.py [--conversations 200] [--turns 20] [--clients 50]
        [--postgres postgresql://postgres@127.0.0.1:5432/test] [--json out.json]
    python bench/bench_proxy.py --shape full [--at 10,200,800] [--window 20]
        [--modes header,transparent] [--stores sqlite,postgres]
        [--litellm /opt/litellm-venv/bin/litellm] [--litellm-hook]
        [--server-impl auto|asyncio] [--repeat 3]
        [--interleave]
    python bench/bench_proxy.py --stream [--sequential 200] [--chunk-delay 0.01] [--words 16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

import httpx

PAGING = ("--boundary", "fixed_4", "-k", "2")
DEADLINE_S = 900.0  # the whole run stops by itself after this
#: LiteLLM refuses to start without a master key (it then needs no database).
LITELLM_KEY = "sk-bench-" + "0" * 32


def proxy_main(argv: list[str], impl: str) -> None:
    """``copage serve`` with uvicorn's event loop and HTTP parser chosen (run in its own
    process): ``auto`` (uvloop and httptools when installed) or ``asyncio`` (h11)."""
    from copage.cli.main import main as cli

    if impl == "asyncio":
        from copage.server import launch as run

        run.UVICORN_IMPL = {"loop": "asyncio", "http": "h11"}
    sys.exit(cli(argv))


def upstream_main(port: int, chunk_delay: float = 0.0, words: int = 16) -> None:
    """The scripted upstream (run in its own process): recall on 'RECALL', else echo;
    with ``chunk_delay`` (``--stream``) every request gets ``words`` words: streamed one
    per chunk, ``chunk_delay`` apart, or whole after as long as the stream would take."""
    from copage.llm.fake_server import FakeServer, Reply, echo

    def respond(body: dict[str, Any]) -> Reply:
        if chunk_delay:  # --stream: an answer that takes as long streamed or not
            text = " ".join(f"word{i}" for i in range(words))
            if body.get("stream"):
                return Reply(text=text, chunk_delay=chunk_delay)
            return Reply(text=text, delay=chunk_delay * (words + 3))  # + finish, usage, DONE
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Reply(text="answer from the recalled page")
        if "RECALL" in (last.get("content") or "") and body.get("tools"):
            return Reply(tool_calls=[("recall", {"page": "p1"})])
        return echo(body)

    FakeServer(respond, record=False, port=port).start()._thread.join()


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


def stop_proxy(proc: subprocess.Popen[bytes], postgres: str | None, schema: str) -> None:
    """Stop a proxy started by the bench; drop its PostgreSQL schema when it had one."""
    proc.terminate()
    proc.wait(30)
    if postgres is not None:
        import psycopg

        with psycopg.connect(postgres, autocommit=True) as c:
            c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


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


def _streamed(http: httpx.Client, url: str, body: dict[str, Any],
              headers: dict[str, str]) -> tuple[float, float]:
    """One streamed request: seconds to the first content delta, and to the last byte."""
    t0 = time.perf_counter()
    first = None
    with http.stream("POST", url, json=body, headers=headers) as r:
        if r.status_code != 200:
            raise RuntimeError(f"{url}: {r.status_code} {r.read()[:300]!r}")
        for line in r.iter_lines():
            if first is None and line.startswith("data: {"):
                choices = json.loads(line[6:]).get("choices") or [{}]
                if (choices[0].get("delta") or {}).get("content"):
                    first = time.perf_counter() - t0
    total = time.perf_counter() - t0
    if first is None:
        raise RuntimeError(f"{url}: no content delta")
    return first, total


def time_to_first_token(proxy: str, upstream: str, n: int) -> dict[str, Any]:
    """One client, streamed requests, direct and proxied alternating (see module docstring)."""
    rows: dict[str, dict[str, list[float]]] = {
        side: {"first": [], "total": []} for side in ("direct", "proxied")}
    cid = f"ttft-{uuid.uuid4().hex[:8]}"
    with httpx.Client(timeout=60) as http:
        for t in range(5):  # warm-up
            _streamed(http, f"{proxy}/v1/chat/completions", {
                "model": "fake", "stream": True,
                "messages": [{"role": "user", "content": "warm"}]},
                {"X-Copage-Conversation": cid})
        for t in range(n):
            # the usage chunk asked for both ways: the proxy always asks its upstream for it
            body = {"model": "fake", "stream": True, "stream_options": {"include_usage": True},
                    "messages": [{"role": "user", "content": f"streamed turn {t}"}]}
            for side in ("direct", "proxied") if t % 2 else ("proxied", "direct"):
                if side == "direct":
                    first, total = _streamed(http, f"{upstream}/chat/completions", body, {})
                else:
                    first, total = _streamed(http, f"{proxy}/v1/chat/completions", body, {
                        "X-Copage-Conversation": f"{cid}-{t // 20}"})
                rows[side]["first"].append(first)
                rows[side]["total"].append(total)
    out: dict[str, Any] = {"requests": n, **{
        f"{side}_{k}_{q}_ms": pct(rows[side][k], v) for side in rows
        for k in ("first", "total") for q, v in (("p50", 0.5), ("p99", 0.99))}}
    for k in ("first", "total"):
        added = [p - d for p, d in zip(rows["proxied"][k], rows["direct"][k], strict=True)]
        out[f"paired_added_{k}_p50_ms"] = pct(added, 0.5)
        out[f"paired_added_{k}_p99_ms"] = pct(added, 0.99)
    return out


def run_stream(args: argparse.Namespace, upstream: str, tmp: str) -> dict[str, Any]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve-proxy", args.server_impl, "serve",
         "--upstream", upstream, "--store", f"sqlite://{tmp}/stream.db", "--port", str(port),
         "--log-level", "warning", *PAGING],
        env={**os.environ, "COPAGE_KEYS": ""}, stderr=subprocess.DEVNULL)
    try:
        wait_up(f"http://127.0.0.1:{port}/healthz", proc)
        res = time_to_first_token(f"http://127.0.0.1:{port}", upstream, args.sequential)
    finally:
        proc.terminate()
        proc.wait(20)
    res.update(chunk_delay_s=args.chunk_delay, words=args.words)
    print(json.dumps(res), flush=True)
    print("\n| | first content delta p50 / p99 | whole answer p50 / p99 |")
    print("|---|---|---|")
    for side in ("direct", "proxied"):
        print(f"| {side} | {res[side + '_first_p50_ms']:.1f} / {res[side + '_first_p99_ms']:.1f}"
              f" ms | {res[side + '_total_p50_ms']:.1f} / {res[side + '_total_p99_ms']:.1f} ms |")
    print(f"| added (paired) | {res['paired_added_first_p50_ms']:.1f} / "
          f"{res['paired_added_first_p99_ms']:.1f} ms | {res['paired_added_total_p50_ms']:.1f}"
          f" / {res['paired_added_total_p99_ms']:.1f} ms |")
    return res


def cpu_seconds(pid: int) -> float | None:
    """CPU time so far of every thread of process ``pid`` (Linux schedstat), or None."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                continue  # a thread that just ended
    except FileNotFoundError:
        return None
    return total / 1e9


def full_history(proxy: str, upstream: str, *, header: bool, at: list[int], window: int,
                 model: str = "fake", auth: str | None = None,
                 pid: int | None = None) -> dict[str, Any]:
    """One client, one conversation resending its whole history (see module docstring);
    ``pid``: the proxy's process, whose CPU time per turn is measured in each window."""
    cid = f"full-{uuid.uuid4().hex[:8]}"
    headers = {"X-Copage-Conversation": cid} if header else {}
    if auth:
        headers["authorization"] = f"Bearer {auth}"
    hist: list[dict[str, Any]] = []
    rows: dict[int, dict[str, list[float]]] = {t: {"direct": [], "proxied": []} for t in at}
    last = max(at) + window
    bodies = 0
    cpu: dict[int, list[float]] = {t: [] for t in at}
    with httpx.Client(timeout=60) as http:
        for t in range(1, last):
            hist.append({"role": "user", "content": f"turn {t}: tell me about item {t} "
                         f"(the code word is w{t}) and how it relates to the earlier ones"})
            body = {"model": model, "messages": hist}
            target = next((a for a in at if a <= t < a + window), None)
            if pid is not None and target is not None and t == target:
                cpu[target].append(cpu_seconds(pid) or 0.0)  # before the window's first turn
            # direct and proxied in alternating order, so a load change hits both alike
            for side in ("direct", "proxied") if t % 2 else ("proxied", "direct"):
                t0 = time.perf_counter()
                if side == "direct":
                    r = http.post(f"{upstream}/chat/completions", json=body)
                    d = time.perf_counter() - t0
                else:
                    r2 = http.post(f"{proxy}/v1/chat/completions", json=body, headers=headers)
                    p = time.perf_counter() - t0
            if r.status_code != 200 or r2.status_code != 200:
                raise RuntimeError(f"turn {t}: {r.status_code}/{r2.status_code} {r2.text[:300]}")
            if target is not None:
                rows[target]["direct"].append(d)
                rows[target]["proxied"].append(p)
                bodies = len(json.dumps(body))
            hist.append(r2.json()["choices"][0]["message"])
            if pid is not None and target is not None and t == target + window - 1:
                cpu[target][-1] = (cpu_seconds(pid) or 0.0) - cpu[target][-1]  # after its last
    out: dict[str, Any] = {}
    for t, xs in rows.items():
        added = sorted(p - d for p, d in zip(xs["proxied"], xs["direct"], strict=True))
        out[str(t)] = {**summary(xs["direct"], xs["proxied"]),
                       "paired_added_p50_ms": added[len(added) // 2] * 1000,
                       "paired_added_p99_ms": added[min(len(added) - 1,
                                                        int(0.99 * len(added)))] * 1000}
        if pid is not None and cpu[t]:
            out[str(t)]["cpu_ms"] = cpu[t][-1] / window * 1000
    out["last_body_bytes"] = bodies
    return out


def full_interleaved(proxy: str, upstream: str, *, header: bool, at: list[int],
                     window: int) -> dict[str, Any]:
    """As :func:`full_history`, with one conversation per point of ``at`` in the same
    proxy, driven turn by turn in rotation once each has reached its point: the turns
    measured at 10 and at 800 alternate, so a change of the machine's load hits both
    alike, and their ratio comes from one run (``--interleave``)."""
    headers_of = {t: {"X-Copage-Conversation": f"il-{t}-{uuid.uuid4().hex[:6]}"} if header
                  else {} for t in at}
    hist: dict[int, list[dict[str, Any]]] = {t: [] for t in at}
    added: dict[int, list[float]] = {t: [] for t in at}
    direct: dict[int, list[float]] = {t: [] for t in at}
    tag = uuid.uuid4().hex[:6]

    def turn(http: httpx.Client, point: int, n: int, timed: bool) -> None:
        h = hist[point]
        h.append({"role": "user", "content": f"[{tag}-{point}] turn {n}: tell me about item "
                  f"{n} (the code word is w{n}) and how it relates to the earlier ones"})
        body = {"model": "fake", "messages": h}
        d = p = 0.0
        for side in ("direct", "proxied") if n % 2 else ("proxied", "direct"):
            if side == "direct" and not timed:
                continue
            t0 = time.perf_counter()
            if side == "direct":
                r = http.post(f"{upstream}/chat/completions", json=body)
                d = time.perf_counter() - t0
            else:
                r2 = http.post(f"{proxy}/v1/chat/completions", json=body,
                               headers=headers_of[point])
                p = time.perf_counter() - t0
            if (r if side == "direct" else r2).status_code != 200:
                raise RuntimeError(f"turn {n}: {side} failed")
        if timed:
            added[point].append(p - d)
            direct[point].append(d)
        h.append(r2.json()["choices"][0]["message"])

    with httpx.Client(timeout=60) as http:
        for point in at:  # grow each conversation to its point (not timed)
            for n in range(1, point):
                turn(http, point, n, False)
        for k in range(window):
            order = at if k % 2 else at[::-1]
            for point in order:
                turn(http, point, point + k, True)
    out: dict[str, Any] = {}
    for t in at:
        xs = sorted(added[t])
        out[str(t)] = {"direct_p50_ms": pct(direct[t], 0.5),
                       "paired_added_p50_ms": xs[len(xs) // 2] * 1000,
                       "paired_added_p99_ms": xs[min(len(xs) - 1, int(0.99 * len(xs)))] * 1000}
    return out


def start_litellm(exe: str, upstream: str, port: int, tmp: str,
                  hook: bool = False) -> subprocess.Popen[bytes]:
    """LiteLLM's proxy in front of ``upstream`` (no database); with ``hook``, copage's
    LiteLLM hook as its callback (``copage.adapters.litellm.proxy.hook``: a SQLite store in
    ``tmp``, the paging of ``PAGING``), else no callbacks."""
    cfg = os.path.join(tmp, "litellm-copage.yaml" if hook else "litellm.yaml")
    with open(cfg, "w") as f:
        f.write("model_list:\n  - model_name: fake\n    litellm_params:\n"
                f"      model: openai/fake-model\n      api_base: {upstream}\n"
                "      api_key: sk-none\n"
                "litellm_settings:\n  telemetry: false\n  drop_params: true\n"
                + ("  callbacks: copage.adapters.litellm.proxy.hook\n" if hook else "")
                + f"general_settings:\n  master_key: {LITELLM_KEY}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "LITELLM"))}
    env["LITELLM_LOG"] = "ERROR"
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # offline: the price map it ships
    if hook:
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
        env["PYTHONPATH"] = os.pathsep.join(x for x in (os.path.abspath(src),
                                                        env.get("PYTHONPATH", "")) if x)
        env.update(COPAGE_STORE=f"sqlite:///{tmp}/litellm-copage.db",
                   COPAGE_BOUNDARY=PAGING[1], COPAGE_RESIDENT_PAGES=PAGING[3])
    return subprocess.Popen([exe, "--config", cfg, "--port", str(port), "--host", "127.0.0.1",
                             "--num_workers", "1"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def run_full(args: argparse.Namespace, upstream: str, tmp: str) -> list[dict[str, Any]]:
    at = [int(x) for x in args.at.split(",")]
    results: list[dict[str, Any]] = []
    systems: list[tuple[str, str, str]] = [
        ("copage", store, mode) for store in args.stores.split(",")
        for mode in args.modes.split(",")]
    if args.litellm_hook and not args.litellm:  # the one installed beside this Python
        args.litellm = os.path.join(os.path.dirname(sys.executable), "litellm")
    if args.litellm:
        systems.append(("litellm", "-", "-"))
    if args.litellm_hook:  # LiteLLM with copage's hook, the conversation named by the header
        systems.append(("litellm+copage", "sqlite", "header"))
    # every system once per round, rounds repeated: a load change on the shared machine
    # then hits every system, and the median over rounds damps it
    runs = [(r, *sys_) for r in range(args.repeat) for sys_ in systems]
    for rep, system, store_kind, mode in runs:
        port = free_port()
        schema = f"copage_bench_{uuid.uuid4().hex[:8]}"
        if system.startswith("litellm"):
            proc = start_litellm(args.litellm, upstream, port, tmp,
                                 hook=system == "litellm+copage")
            health = f"http://127.0.0.1:{port}/health/liveliness"
        else:
            store = (f"sqlite://{tmp}/full-{store_kind}-{mode}.db" if store_kind == "sqlite"
                     else f"sqlite://{tmp}/full-{store_kind}-{mode}.db?synchronous=FULL"
                     if store_kind == "sqlite-full" else f"{args.postgres}?schema={schema}")
            proc = subprocess.Popen(
                [sys.executable, __file__, "--serve-proxy", args.server_impl, "serve",
                 "--upstream", upstream, "--store", store, "--port", str(port),
                 "--log-level", "warning", *PAGING],
                env={**os.environ, "COPAGE_KEYS": ""}, stderr=subprocess.DEVNULL)
            health = f"http://127.0.0.1:{port}/healthz"
        try:
            wait_up(health, proc, timeout=120)
            run = full_interleaved if args.interleave and system == "copage" else None
            res = run(f"http://127.0.0.1:{port}", upstream, header=mode == "header", at=at,
                      window=args.window) if run else full_history(
                               f"http://127.0.0.1:{port}", upstream, header=mode == "header",
                               at=at, window=args.window,
                               auth=LITELLM_KEY if system.startswith("litellm") else None,
                               pid=proc.pid)  # LiteLLM's too: the hook runs in its threads
        finally:
            stop_proxy(proc, args.postgres if store_kind == "postgres" else None, schema)
        row = {"system": system, "store": store_kind, "mode": mode, "round": rep,
               "server_impl": args.server_impl if system == "copage" else "-", "turns": res}
        results.append(row)
        print(json.dumps(row), flush=True)
    table = _median_rounds(results, at)
    lite = next((r for r in table if r["system"] == "litellm"), None)
    print(f"\n| system | store | mode | turn | direct p50 | added p50 | added p99 | proxy CPU "
          f"per turn | {'ratio to LiteLLM (p50) |' if lite else ''}")
    print("|---|---|---|---|---|---|---|---|" + ("---|" if lite else ""))
    for r in table:
        for t in at:
            x = r["turns"][str(t)]
            ratio = (f" {x['paired_added_p50_ms'] / lite['turns'][str(t)]['paired_added_p50_ms']:.2f} |"
                     if lite else "")
            cpu = f"{x['cpu_ms']:.2f} ms" if "cpu_ms" in x else "-"
            print(f"| {r['system']} | {r['store']} | {r['mode']} | {t} | "
                  f"{x['direct_p50_ms']:.1f} ms | {x['paired_added_p50_ms']:.1f} ms | "
                  f"{x['paired_added_p99_ms']:.1f} ms | {cpu} |{ratio}")
    return results


def _median_rounds(results: list[dict[str, Any]], at: list[int]) -> list[dict[str, Any]]:
    """One row per system: each figure the median over the rounds."""
    out: list[dict[str, Any]] = []
    keys = ("direct_p50_ms", "paired_added_p50_ms", "paired_added_p99_ms", "cpu_ms")
    for row in results:
        if any((o["system"], o["store"], o["mode"]) == (row["system"], row["store"], row["mode"])
               for o in out):
            continue
        same = [r for r in results if (r["system"], r["store"], r["mode"])
                == (row["system"], row["store"], row["mode"])]
        turns = {str(t): {k: statistics.median(r["turns"][str(t)][k] for r in same)
                          for k in keys if k in row["turns"][str(t)]} for t in at}
        out.append({**row, "rounds": len(same), "turns": turns})
    return out


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve-proxy":
        proxy_main(sys.argv[3:], sys.argv[2])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--conversations", type=int, default=200)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--sequential", type=int, default=400)
    ap.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--stores", default="sqlite,postgres")
    ap.add_argument("--json", help="write results here")
    ap.add_argument("--shape", choices=["one", "full"], default="one",
                    help="one message per request (header mode) or the whole history")
    ap.add_argument("--at", default="10,200,800", help="--shape full: turns measured")
    ap.add_argument("--window", type=int, default=50, help="--shape full: turns per point")
    ap.add_argument("--modes", default="header,transparent", help="--shape full")
    ap.add_argument("--litellm", help="--shape full: LiteLLM's litellm executable")
    ap.add_argument("--litellm-hook", action="store_true",
                    help="--shape full: also LiteLLM with copage's hook (copage[litellm]; the "
                         "litellm executable of --litellm, else the one beside this Python)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="--shape full: rounds over every system (figures: median of rounds)")
    ap.add_argument("--interleave", action="store_true",
                    help="--shape full: one conversation per point of --at, their measured "
                         "turns alternating in one proxy (ratios from one run)")
    ap.add_argument("--server-impl", choices=["auto", "asyncio"], default="auto",
                    help="uvicorn loop/parser: auto (uvloop+httptools if installed) or asyncio")
    ap.add_argument("--stream", action="store_true",
                    help="time to first token, direct vs proxied (streamed requests)")
    ap.add_argument("--chunk-delay", type=float, default=0.01,
                    help="--stream: the upstream's pause between chunks (seconds)")
    ap.add_argument("--words", type=int, default=16, help="--stream: words per answer")
    ap.add_argument("--upstream-server", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.upstream_server:
        upstream_main(args.upstream_server, args.chunk_delay, args.words)
        return 0
    started = time.monotonic()
    up_port = free_port()
    up_proc = subprocess.Popen([sys.executable, __file__, "--upstream-server", str(up_port),
                                "--chunk-delay", str(args.chunk_delay if args.stream else 0),
                                "--words", str(args.words)])
    upstream = f"http://127.0.0.1:{up_port}/v1"
    results: list[dict[str, Any]] = []
    try:
        wait_up(f"{upstream}/models", up_proc)
        tmp = tempfile.mkdtemp(prefix="copage-bench-")
        if args.stream:
            res = run_stream(args, upstream, tmp)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(res, f, indent=1)
            return 0
        if args.shape == "full":
            full = run_full(args, upstream, tmp)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(full, f, indent=1)
            return 0
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
                    [sys.executable, __file__, "--serve-proxy", args.server_impl, "serve",
                     "--upstream", upstream,
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
                    stop_proxy(proc, args.postgres if store_kind == "postgres" else None, schema)
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
