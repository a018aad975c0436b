"""Test and benchmark helper for the proxy: :class:`ServerThread` runs an ASGI app on a
free loopback port. (The fake upstream is :class:`copage.llm.fake_server.FakeServer`.)
"""

from __future__ import annotations

import threading
import time
from typing import Any, Self

__all__ = ["ServerThread"]


class ServerThread:
    """Runs an ASGI app with uvicorn in a thread on a free loopback port."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1") -> None:
        import uvicorn

        config = uvicorn.Config(app, host=host, port=0, log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        sock = self.server.servers[0].sockets[0]
        return f"http://127.0.0.1:{sock.getsockname()[1]}"

    def start(self, timeout: float = 10.0) -> Self:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
