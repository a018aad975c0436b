"""Helpers for the MCP tests: text of results, a copage MCP server process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from adapter_fixtures import PAGING

COPAGE = [sys.executable, "-m", "copage.cli.main"]
PAGING_FLAGS = ["--boundary", PAGING["boundary"], "--policy", PAGING["policy"],
                "-k", str(PAGING["resident_pages"]), "--keywords", PAGING["keywords"]]


def text(result: Any) -> str:
    """The text content of a CallToolResult."""
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def http_server(store: str, *, keys: str | None = None) -> Iterator[str]:
    """``copage mcp --transport http`` in a subprocess; yields its URL."""
    port = free_port()
    env = {**os.environ}
    env.pop("COPAGE_KEYS", None)
    if keys:
        env["COPAGE_KEYS"] = keys
    proc = subprocess.Popen(
        [*COPAGE, "mcp", "--transport", "http", "--port", str(port), "--store", store,
         *PAGING_FLAGS], env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"copage mcp exited: {proc.stderr.read() if proc.stderr else ''}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'mem.db'}"
