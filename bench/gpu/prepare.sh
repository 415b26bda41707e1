#!/usr/bin/env bash
# bench/gpu/prepare.sh - run HERE (where the compiler builds), before the GPU
# check: the device machine has CUDA, CMake and Python but no LLVM/MLIR, so
# the compiler's output travels to it. Writes the emitted C++ program of each
# model the check runs into $PREP (default build/gpu-check-src, an ignored
# path: pass it in the device tool's `carry`).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
PREP=${PREP:-$BUILD_DIR/gpu-check-src}
BRAID_RUN=${BRAID_RUN:-$BUILD_DIR/bin/braid-run}
mkdir -p "$PREP"
cd "$ROOT"

emit() { # NAME DTYPE PRESET ARGS...
  local name=$1 dtype=$2
  shift 2
  PYTHONPATH=python python3 -m braid.models "$@" >"$PREP/$name.mlir"
  "$BRAID_RUN" "$PREP/$name.mlir" --dtype "$dtype" --emit-cpp "$PREP/$name.cpp" \
    --compile-only --quiet
  echo "prepared $name ($dtype): $(wc -c <"$PREP/$name.cpp") bytes of C++"
}

for preset in gpt-tiny llama-tiny mamba-tiny moe-tiny hybrid-tiny; do
  emit "$preset" f32 "$preset"
done
emit llama3-8b-slice f32 llama3-8b --layers 1 --seq 128 --batch 1
emit llama3-8b-medium f32 llama3-8b --layers 2 --seq 1024 --batch 4
emit llama3-8b-medium-bf16 bf16 llama3-8b --layers 2 --seq 1024 --batch 4
