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
  echo "--dtype $dtype" >"$PREP/$name.flags" # for bench/gpu/judge.sh
  echo "prepared $name ($dtype): $(wc -c <"$PREP/$name.cpp") bytes of C++"
}

for preset in gpt-tiny llama-tiny mamba-tiny moe-tiny hybrid-tiny; do
  emit "$preset" f32 "$preset"
done
emit llama3-8b-slice f32 llama3-8b --layers 1 --seq 128 --batch 1
emit llama3-8b-medium f32 llama3-8b --layers 2 --seq 1024 --batch 4
emit llama3-8b-medium-bf16 bf16 llama3-8b --layers 2 --seq 1024 --batch 4

# GPU ranks over NCCL on one GPU (bench/gpu/ranks.sh): each plan and the
# unpartitioned program of its model, which is what the plan must reproduce.
emit_plan() { # NAME DTYPE "BRAID-RUN PLAN FLAGS" PRESET ARGS...
  local name=$1 dtype=$2 flags=$3
  shift 3
  PYTHONPATH=python python3 -m braid.models "$@" >"$PREP/$name.mlir"
  # shellcheck disable=SC2086
  "$BRAID_RUN" "$PREP/$name.mlir" --dtype "$dtype" $flags --emit-cpp "$PREP/$name.cpp" \
    --compile-only --quiet
  # A pipeline is one program per stage (NAME.stageS.cpp), the rest one program.
  echo "prepared $name ($dtype, ${flags:-one rank}): $(cat "$PREP/$name".*cpp | wc -c) bytes of C++"
  # What bench/gpu/judge.sh gives braid-run --verify-from with the runs.
  echo "--dtype $dtype $flags" >"$PREP/$name.flags"
}
emit_plan ranks-gpt f32 "" gpt-tiny --layers 4 --batch 4
emit_plan ranks-gpt-pp2 f32 "--grid pp=2 --microbatches 2 --schedule 1f1b" gpt-tiny --layers 4 --batch 4
emit_plan ranks-gpt-pp2v2 f32 "--grid pp=2 --virtual-stages 2 --microbatches 4 --schedule interleaved" \
  gpt-tiny --layers 4 --batch 4
emit_plan ranks-llama f32 "" llama-tiny --batch 4
emit_plan ranks-llama-dp2 f32 "--grid dp=2 --zero 1" llama-tiny --batch 4
emit_plan ranks-llama-tp2 f32 "--grid tp=2 --sequence-parallel" llama-tiny --batch 4
emit_plan ranks-llama-cp2 f32 "--grid cp=2 --cp-attention ring" llama-tiny --batch 4
emit_plan ranks-llama-dp2tp2 f32 "--grid dp=2,tp=2 --zero 3" llama-tiny --batch 4
emit_plan ranks-llama-bf16 bf16 "" llama-tiny --batch 4
emit_plan ranks-llama-dp2tp2-bf16 bf16 "--grid dp=2,tp=2 --zero 1 --sequence-parallel" \
  llama-tiny --batch 4
emit_plan ranks-moe f32 "" moe-tiny --batch 4
emit_plan ranks-moe-dp2ep2 f32 "--grid dp=2,ep=2 --zero 3" moe-tiny --batch 4
