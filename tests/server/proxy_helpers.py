"""Helpers shared by the proxy tests (unique module name: conftest is not importable)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import openai

from copage.llm.fake_server import FakeServer, Reply, echo
from copage.server.server_thread import ServerThread

KEY_A = "sk-proxy-alice-0123456789"
KEY_B = "sk-proxy-bob-9876543210"
UPSTREAM_KEY = "sk-upstream-SECRET-abcdef123456"
KEYS = {KEY_A: "alice", KEY_B: "bob"}
PG_URL = os.environ.get("COPAGE_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
ROOT = Path(__file__).resolve().parents[2]


def script(body: dict[str, Any]) -> Reply:
    """Upstream behaviour: RECALL pN asks for a recall, WEATHER calls a client tool."""
    msgs = body["messages"]
    last = msgs[-1]
    names = [t["function"]["name"] for t in body.get("tools", [])]
    recall = next((n for n in names if n.endswith("recall")), None)
    if last["role"] == "tool":
        return Reply(text=f"tool said: {last['content'][:80]}")
    text = last.get("content") or ""
    if "RECALL" in text and recall and body.get("tool_choice") != "none":
        page = text.split("RECALL", 1)[1].split()[0]
        return Reply(tool_calls=[(recall, {"page": page})])
    if "WEATHER" in text and "get_weather" in names:
        return Reply(tool_calls=[("get_weather", {"city": "Paris"})])
    return echo(body)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn_worker(port: int, upstream: str, store: str, *extra: str,
                 env: dict[str, str] | None = None, log_level: str | None = "warning",
                 stderr: Any = subprocess.PIPE, stdout: Any = subprocess.DEVNULL,
                 ) -> subprocess.Popen[bytes]:
    """A real ``copage serve`` process on 127.0.0.1:port; waits for /healthz.

    ``log_level`` None runs at the server's default level; ``stderr`` may be a file;
    ``store`` "" leaves ``--store`` out (the default store).
    """
    full_env = {**os.environ, "COPAGE_KEYS": f"{KEY_A}=alice,{KEY_B}=bob",
                "COPAGE_UPSTREAM_KEY": UPSTREAM_KEY, **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, "-m", "copage.cli.main", "serve", "--upstream", upstream,
         *(("--store", store) if store else ()), "--port", str(port),
         *(("--log-level", log_level) if log_level else ()), *extra],
        env=full_env, stdout=stdout, stderr=stderr,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            text = proc.stderr.read().decode()[-2000:] if proc.stderr else ""
            raise RuntimeError(f"worker exited: {text}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("worker did not start")


def stats(headers: Any) -> dict[str, Any]:
    return dict(json.loads(headers["x-copage-stats"]))


class Proxy:
    """A running proxy and helpers to build clients for it."""

    def __init__(self, server: ServerThread, upstream: FakeServer) -> None:
        self.server, self.upstream = server, upstream
        self.url = server.url

    def client(self, key: str = KEY_A, **kw: Any) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.url + "/v1", api_key=key, max_retries=0, **kw)

    @property
    def state(self) -> Any:
        return self.server.server.config.app.state.proxy
