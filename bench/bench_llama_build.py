"""Prompt and generation speed of two or more llama-server builds, measured in one run.

Used to choose how scripts/install-local-model.sh builds llama.cpp (docs/local-models.md):
a fixed portable instruction set (x86-64-v3) or llama.cpp's runtime CPU dispatch
(GGML_BACKEND_DL=ON, GGML_CPU_ALL_VARIANTS=ON). Each build serves the same GGUF; the
builds take turns, request after request, so a noisy machine slows them alike; the ratio
of medians is what to read.

    python bench/bench_llama_build.py --model M.gguf --server v3=/opt/copage-llm/build/bin/llama-server \
        --server dl=/opt/copage-llm-dl/bin/llama-server --rounds 5
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

# About 1,000 tokens of plain prose: prompt processing dominates like a paged request.
PROMPT = " ".join(
    f"On day {i} Caroline told Melanie about the pottery class, the dog, the trip to the "
    f"lake and the book she was reading, and Melanie answered with news of her kids."
    for i in range(1, 40)
)


@dataclass
class Server:
    name: str
    proc: subprocess.Popen[bytes]
    url: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(name: str, binary: str, model: str, threads: int) -> Server:
    port = _free_port()
    log = open(Path("/tmp") / f"bench-llama-{name}.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [binary, "--model", model, "--host", "127.0.0.1", "--port", str(port), "--ctx-size",
         "2048", "--parallel", "1", "--threads", str(threads)],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{name}: {binary} exited with {proc.returncode} (log {log.name})")
        try:
            with urllib.request.urlopen(url + "/health", timeout=5):
                return Server(name, proc, url)
        except OSError:
            time.sleep(0.25)
    proc.kill()
    raise SystemExit(f"{name}: no /health within 120 s")


def _one(server: Server) -> tuple[float, float]:
    body = {"prompt": PROMPT, "n_predict": 32, "cache_prompt": False, "temperature": 0}
    req = urllib.request.Request(server.url + "/completion", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        t = json.load(r)["timings"]
    return float(t["prompt_per_second"]), float(t["predicted_per_second"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--server", action="append", required=True, help="NAME=PATH, repeatable")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    servers = [_start(*s.split("=", 1), args.model, args.threads) for s in args.server]
    try:
        for s in servers:
            _one(s)  # warm-up
        got: dict[str, list[tuple[float, float]]] = {s.name: [] for s in servers}
        for _ in range(args.rounds):
            for s in servers:
                got[s.name].append(_one(s))
    finally:
        for s in servers:
            s.proc.terminate()
            s.proc.wait(10)
    base = statistics.median(p for p, _ in got[servers[0].name])
    print(f"{'build':<10} {'prompt tok/s':>13} {'gen tok/s':>10} {'prompt vs ' + servers[0].name:>14}")
    for s in servers:
        pp = statistics.median(p for p, _ in got[s.name])
        tg = statistics.median(g for _, g in got[s.name])
        print(f"{s.name:<10} {pp:>13.1f} {tg:>10.1f} {pp / base:>14.2f}x")


if __name__ == "__main__":
    main()
