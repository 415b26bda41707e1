#!/usr/bin/env bash
# bench/gpu/judge.sh RESULTS - run where the compiler builds, on what the
# device check brought back (RESULTS: a copy of its $CHECK_DIR, dumps
# included): judges each GPU run as braid-run --verify judges its own, with
# braid-run --verify-from (include/braid/Driver/Verify.h: losses, step 1's
# gradients, step 1's updates replayed on the run's own gradients, every
# rank's copies).
#   - ranks/NAME/dump (bench/gpu/ranks.sh, pruned by prune_dumps.py): the plan NAME on NCCL ranks of one
#     GPU against its model on one rank of that GPU, at --verify's default
#     tolerance (the same kernels on both sides; at bf16 the bounds it
#     derives from the 1-rank f32 run).
#   - NAME/cuda/dump against NAME/cpu/dump (check.sh's tiny presets): the
#     CUDA backend against the CPU backend at TOL (default 1e-3, the check's
#     tolerance between the two backends' kernels).
# PREP (default build/gpu-check-src) holds the models and their flags as
# bench/gpu/prepare.sh wrote them. Exits 1 when any run fails its judge.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RESULTS=${1:?usage: judge.sh RESULTS}
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
PREP=${PREP:-$BUILD_DIR/gpu-check-src}
BRAID_RUN=${BRAID_RUN:-$BUILD_DIR/bin/braid-run}
TOL=${TOL:-1e-3}
FAILURES=()

judge() { # LABEL NAME DIR [braid-run flags...]
  local label=$1 name=$2 dir=$3
  shift 3
  [[ -f $PREP/$name.mlir && -f $PREP/$name.flags ]] ||
    { FAILURES+=("$label: not prepared"); echo "$label: no $PREP/$name.mlir"; return; }
  local out rc
  # shellcheck disable=SC2046 # the flags file holds words
  out=$("$BRAID_RUN" "$PREP/$name.mlir" $(cat "$PREP/$name.flags") --steps 2 --quiet \
    --verify-from "$dir" "$@" 2>&1)
  rc=$?
  printf '%s:\n%s\n' "$label" "$(grep -E '^verify:|error|braid-run' <<<"$out" | sed 's/^/  /')"
  ((rc == 0)) || FAILURES+=("$label")
}

# A plan's 1-rank runs (ranks/NAME/references: "REFERENCE [F32-REFERENCE]")
# go where --verify-from looks for them.
for list in "$RESULTS"/ranks/*/references; do
  run=$(dirname "$list") name=$(basename "$(dirname "$list")")
  read -r ref f32 < "$list"
  rm -rf "$run/dump/reference" "$run/dump/reference-f32"
  cp -r "$RESULTS/ranks/$ref/dump" "$run/dump/reference"
  [[ -n ${f32:-} ]] && cp -r "$RESULTS/ranks/$f32/dump" "$run/dump/reference-f32"
  judge "$name (GPU ranks over NCCL vs one rank)" "$name" "$run/dump"
done

for preset in gpt-tiny llama-tiny mamba-tiny moe-tiny hybrid-tiny; do
  cuda=$RESULTS/$preset/cuda/dump cpu=$RESULTS/$preset/cpu/dump
  [[ -d $cuda && -d $cpu ]] || continue
  rm -rf "$cuda/reference" && cp -r "$cpu" "$cuda/reference"
  judge "$preset (CUDA backend vs CPU backend)" "$preset" "$cuda" --verify-tolerance "$TOL"
done

if ((${#FAILURES[@]})); then
  printf 'RESULT: FAIL (%s)\n' "${FAILURES[*]}"
  exit 1
fi
echo "RESULT: PASS"
