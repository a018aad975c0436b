"""Every ```python block of README.md and docs/*.md runs, offline; every ``copage``
command of a ```sh or ```bash block parses with the CLI (:func:`test_shell_command_parses`).

Each document's blocks run in order, each in its own Python process, in one
fresh directory per document (so a later block sees the files an earlier one
made, as a reader's would). What makes them run without a network, explicitly:

* ``OPENAI_BASE_URL``/``OPENAI_API_BASE`` point the ``openai`` SDK, LangChain and
  the Agents SDK at a scripted loopback server (:func:`scripted_model`, a test
  tool: it calls ``recall`` on the bookmark that best matches the question, then
  answers from the tool result); ``OPENAI_AGENTS_DISABLE_TRACING=1`` stops the
  Agents SDK from uploading traces; ``COPAGE_FORBID_NETWORK_MODELS=1`` refuses
  any other model host.
* copage's own model specs name their server in the spec, so
  ``openai:gpt-4o-mini`` is run as ``openai:gpt-4o-mini@<scripted server>``
  (:data:`SPEC`), and the proxy address of ``docs/serve.md``
  (``http://127.0.0.1:8787/v1``) as a ``copage serve`` app started here.
* ``copage`` (the MCP example's server command, started by the MCP SDK with a
  minimal environment) is a script first on ``PATH`` that runs this checkout's
  ``copage.cli.main`` with the venv's Python.

API signatures are written as ```text blocks, not ```python, because they are not
programs. Where a document shows a block's output (a ```text or bare block right
after a paragraph ending in "Output ...:"), the run must print exactly that.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from copage.llm.fake_server import FakeServer, Reply
from copage.server.server_thread import ServerThread

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SPEC = "openai:gpt-4o-mini"
PROXY_URL = "http://127.0.0.1:8787/v1"
_FENCE = re.compile(r"^```([\w+-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int
    code: str
    output: str | None  # the output the document shows for it, if any


def blocks(doc: Path) -> list[Block]:
    text = doc.read_text(encoding="utf-8")
    fences = list(_FENCE.finditer(text))
    out = []
    for i, m in enumerate(fences):
        if m.group(1) != "python":
            continue
        shown = None
        if i + 1 < len(fences) and fences[i + 1].group(1) in ("", "text"):
            between = text[m.end():fences[i + 1].start()].strip()
            if re.match(r"Output\b.*:\Z", between, re.DOTALL):
                shown = fences[i + 1].group(2)
        out.append(Block(doc, text.count("\n", 0, m.start()) + 1, m.group(2), shown))
    return out


def scripted_model(body: dict[str, Any]) -> Reply:
    """Recall the bookmark sharing most words with the question, then answer from it."""
    messages = body.get("messages") or []
    tools = [t["function"]["name"] for t in body.get("tools") or []]
    last = messages[-1] if messages else {}
    if last.get("role") == "tool":
        return Reply(text=f"From the page: {str(last.get('content'))[:80]}")
    question = next((str(m.get("content")) for m in reversed(messages)
                     if m.get("role") == "user"), "")
    system = " ".join(str(m.get("content")) for m in messages if m.get("role") == "system")
    books = re.findall(r"\[(p\d+):([^\]]*)\]", system)
    if "recall" in tools and books:
        words = set(re.findall(r"\w+", question.lower()))
        page = max(books, key=lambda b: len(words & set(re.findall(r"\w+", b[1].lower()))))[0]
        return Reply(tool_calls=[("recall", {"page": page})])
    return Reply(text=f"echo: {question}")


@pytest.fixture(scope="module")
def model() -> Iterator[FakeServer]:
    with FakeServer(scripted_model) as up:
        yield up


@pytest.fixture(scope="module")
def proxy(model: FakeServer) -> Iterator[str]:
    from copage.core.config import PagerConfig
    from copage.server.app import create_app
    from copage.server.settings import ServeSettings

    app = create_app(ServeSettings(upstream=model.url, store="memory://",
                                   keys={"YOUR-PROXY-KEY": "default"},
                                   paging=PagerConfig(), upstream_key="sk-test"))
    with ServerThread(app) as srv:
        yield srv.url + "/v1"


def _copage_command(cwd: Path) -> Path:
    bin_dir = cwd / ".bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "copage"
    script.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT / 'src'} exec {sys.executable} "
                      f'-m copage.cli.main "$@"\n')
    script.chmod(0o755)
    return bin_dir


def _run(block: Block, cwd: Path, model_url: str, proxy_url: str) -> str:
    code = block.code.replace(f'"{SPEC}"', f'"{SPEC}@{model_url}"')
    code = code.replace(PROXY_URL, proxy_url)
    # The MCP example starts this Python's copage; the SDK's minimal environment has no
    # PYTHONPATH, so here it runs the checkout's through the script on PATH instead.
    code = code.replace('command=sys.executable, args=[\n    "-m", "copage.cli.main", ',
                        'command="copage", args=[\n    ')
    # The anthropic SDK's base URL is the proxy's root (it adds /v1/messages itself).
    code = code.replace(PROXY_URL.removesuffix("/v1"), proxy_url.removesuffix("/v1"))
    env = {**os.environ, "OPENAI_BASE_URL": model_url, "OPENAI_API_BASE": model_url,
           "OPENAI_API_KEY": "sk-test", "OPENAI_AGENTS_DISABLE_TRACING": "1",
           "COPAGE_FORBID_NETWORK_MODELS": "1", "PYTHONPATH": str(ROOT / "src"),
           "PATH": f"{_copage_command(cwd)}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("ANTHROPIC_API_KEY", None)
    done = subprocess.run([sys.executable, "-c", code], check=False, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
    where = f"{block.doc.relative_to(ROOT)}:{block.line}"
    assert done.returncode == 0, f"{where} failed:\n{done.stderr[-3000:]}"
    return done.stdout


def test_there_are_blocks_to_run() -> None:
    found = {b.doc.name for d in DOCS for b in blocks(d)}
    assert {"README.md", "langchain.md", "agents-sdk.md", "mcp.md"} <= found


ALL = [b for d in DOCS for b in blocks(d)]


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Path]:
    return {d: tmp_path_factory.mktemp(d.stem) for d in DOCS}


@pytest.mark.parametrize("block", ALL, ids=[f"{b.doc.name}:{b.line}" for b in ALL])
def test_python_block_runs(block: Block, workdirs: dict[Path, Path], model: FakeServer,
                           proxy: str) -> None:
    out = _run(block, workdirs[block.doc], model.url, proxy)
    if block.output is not None:
        assert out.strip() == block.output.strip(), \
            f"{block.doc.name}:{block.line} prints other text than the document shows"


def shell_commands(doc: Path) -> list[tuple[int, list[str]]]:
    """The ``copage ...`` commands of a document's ```sh / ```bash blocks, as argv (a
    ``\\`` continues a line; ``#`` comments, ``VAR=value`` prefixes, ``&&`` chains and a
    trailing ``&`` are read as a shell would; a ``$variable`` stands for ``1``)."""
    import shlex

    text = doc.read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        if m.group(1) not in ("sh", "bash"):
            continue
        first = text.count("\n", 0, m.start()) + 2
        joined = re.sub(r"\\\n", " ", m.group(2))
        joined = re.sub(r"\$\{?\w+\}?", "1", joined)  # a shell variable: any value will do
        for n, line in enumerate(joined.splitlines()):
            for part in re.split(r"&&|;", " ".join(shlex.split(line, comments=True))):
                words = shlex.split(part.strip().removesuffix("&"))
                while words and re.match(r"\w+=", words[0]):
                    words.pop(0)
                if words and (words[0] == "copage" or words[0].endswith("/copage")):
                    out.append((first + n, words[1:]))  # also .venv/bin/copage
    return out


COMMANDS = [(d, n, argv) for d in DOCS for n, argv in shell_commands(d)]


def test_there_are_commands_to_parse() -> None:
    assert {d.name for d, _, _ in COMMANDS} >= {"README.md", "serve.md", "mcp.md", "bench.md"}


@pytest.mark.parametrize(("doc", "line", "argv"), COMMANDS,
                         ids=[f"{d.name}:{n}" for d, n, _ in COMMANDS])
def test_shell_command_parses(doc: Path, line: int, argv: list[str]) -> None:
    """Every ``copage`` command a document shows is one the CLI accepts: the command
    and every option exist and take the values shown (they are parsed, not run: they
    need keys, servers or hours)."""
    from copage.cli.main import build_parser

    if any(w.isupper() and w.strip("[].") in ("ID", "SPEC", "DIR", "LIST", "PATH", "DATASET")
           or w.startswith("[") for w in argv):
        pytest.skip("a usage line (placeholders), not a command")
    try:
        build_parser().parse_args(argv)
    except SystemExit as e:
        pytest.fail(f"{doc.name}:{line}: copage {' '.join(argv)} is refused (exit {e.code})")
