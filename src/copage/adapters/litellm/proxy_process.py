"""LiteLLM's real proxy as a subprocess on a loopback port, for tests and benchmarks.

:class:`LiteLLMProxy` writes a ``config.yaml`` at LiteLLM's defaults (one model routed
to an OpenAI-compatible upstream, a master key, and optionally copage's hook as its
callback), starts ``litellm --config ... --host 127.0.0.1 --port ...`` and waits for
``/health/liveliness``. Offline: the model price map is the one LiteLLM ships
(``LITELLM_LOCAL_MODEL_COST_MAP``), nothing is downloaded.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Self

import copage

__all__ = ["MASTER_KEY", "MODEL", "LiteLLMProxy", "config_yaml", "free_port"]

MASTER_KEY = "sk-copage-test-" + "0123456789abcdef" * 2
MODEL = "fake"
HOOK = "copage.adapters.litellm.proxy.hook"


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def config_yaml(upstream: str, *, hook: bool = True, model: str = MODEL) -> str:
    """LiteLLM's ``config.yaml``: ``model`` routed to ``upstream``, copage's hook if asked."""
    lines = ["model_list:", f"  - model_name: {model}", "    litellm_params:",
             "      model: openai/fake-model", f"      api_base: {upstream}",
             "      api_key: sk-upstream", "general_settings:", f"  master_key: {MASTER_KEY}"]
    if hook:
        lines += ["litellm_settings:", f"  callbacks: {HOOK}"]
    return "\n".join(lines) + "\n"


def _litellm() -> str:
    exe = Path(sys.executable).with_name("litellm")
    found = str(exe) if exe.exists() else shutil.which("litellm")
    if not found:
        raise RuntimeError("the litellm command is missing: pip install 'copage[litellm]'")
    return found


class LiteLLMProxy:
    """``litellm --config`` on a loopback port (``with`` starts and stops it).

    Args:
        workdir: where ``config.yaml`` and the log are written.
        upstream: the upstream's OpenAI base URL (``http://127.0.0.1:PORT/v1``).
        hook: load copage's hook (:data:`HOOK`), configured by ``env``'s ``COPAGE_*``.
        env: more environment variables of the proxy process.
        start_timeout: seconds to wait for the proxy to answer its health check.
    """

    def __init__(self, workdir: Path, upstream: str, *, hook: bool = True,
                 env: Mapping[str, str] | None = None, start_timeout: float = 120.0) -> None:
        self.workdir, self.port = Path(workdir), free_port()
        self.config = self.workdir / "config.yaml"
        self.config.write_text(config_yaml(upstream, hook=hook), encoding="utf-8")
        self.log = self.workdir / "litellm.log"
        src = str(Path(copage.__file__).resolve().parent.parent)  # this copage, whatever cwd
        path = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH", "")) if p)
        self.env = {**os.environ, "PYTHONPATH": path, "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                    "LITELLM_LOG": "ERROR", "NO_PROXY": "127.0.0.1,localhost",
                    **(env or {})}
        self.start_timeout = start_timeout
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The proxy's OpenAI base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Self:
        with open(self.log, "wb") as out:
            self._proc = subprocess.Popen(
                [_litellm(), "--config", str(self.config), "--host", "127.0.0.1",
                 "--port", str(self.port), "--num_workers", "1"],
                cwd=self.workdir, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
        deadline = time.monotonic() + self.start_timeout
        health = f"http://127.0.0.1:{self.port}/health/liveliness"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"litellm exited ({self._proc.returncode}): {self.tail()}")
            try:
                with opener.open(health, timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"litellm did not start in {self.start_timeout:.0f} s: {self.tail()}")

    def tail(self, n: int = 3000) -> str:
        """The end of the proxy's log."""
        try:
            return self.log.read_text(encoding="utf-8", errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGTERM)  # its own session: the proxy and its workers
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=15)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
