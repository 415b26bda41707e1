# bench/gpu/common.sh - sourced first by check.sh and ranks.sh on the device
# machine: the paths and tools they share, the report's sections and
# failures, and the last line they print.
#   ROOT (the checkout, the working directory from here on), BUILD_DIR,
#   CHECK_DIR (the work directory), PREP (bench/gpu/prepare.sh's programs),
#   JOBS, NVCC, PY; section TITLE; fail WHAT; finish (RESULT: PASS / FAIL,
#   exits 1 on a failure).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD_DIR=${BUILD_DIR:-$ROOT/build}
CHECK_DIR=${CHECK_DIR:-$BUILD_DIR/gpu-check}
PREP=${PREP:-$BUILD_DIR/gpu-check-src}
JOBS=${JOBS:-$(nproc)}
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
PY=${PYTHON:-python3}
START=$SECONDS
FAILURES=()
mkdir -p "$CHECK_DIR"
cd "$ROOT"

section() { printf '\n=== %s (t=%ds)\n' "$1" $((SECONDS - START)); }
fail() { FAILURES+=("$1"); echo "FAIL: $1"; }
finish() {
  section "done"
  if ((${#FAILURES[@]})); then
    printf 'RESULT: FAIL (%s)\n' "${FAILURES[*]}"
    exit 1
  fi
  echo "RESULT: PASS in $((SECONDS - START)) s"
}
