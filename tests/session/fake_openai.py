"""A loopback fake of OpenAI's /chat/completions: scripted statuses, bodies and delays."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(text: str = "", calls: list[tuple[str, str, str]] | None = None) -> dict[str, Any]:
    """A chat completion body: text, or tool calls given as (id, name, arguments)."""
    msg: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        msg["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
            for i, n, a in calls
        ]
    return {
        "id": "cmpl-1", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "message": msg,
                     "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }


class FakeOpenAI:
    """Answers each POST with the next scripted (status, body, delay)."""

    def __init__(self) -> None:
        self.script: deque[tuple[int, dict[str, Any], float]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.url = ""

    def add(self, status: int, body: dict[str, Any], delay: float = 0.0) -> FakeOpenAI:
        self.script.append((status, body, delay))
        return self


@contextmanager
def serve() -> Iterator[FakeOpenAI]:
    """Run a fake server on a free loopback port; ``fake.url`` is its ``/v1`` base URL."""
    fake = FakeOpenAI()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            n = int(self.headers.get("content-length", 0))
            fake.requests.append(json.loads(self.rfile.read(n)))
            status, body, delay = fake.script.popleft() if fake.script else (
                500, {"error": {"message": "script empty"}}, 0.0)
            time.sleep(delay)
            data = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
