#!/usr/bin/env bash
# bench/gpu/check.sh - the prepared GPU check (one H200, 16 cores, CUDA in
# /usr/local/cuda, nothing downloadable). Target: under 5 minutes.
#
#  1. nvidia-smi; kernel_test and kernel_grad_test (every non-GEMM forward /
#     backward kernel vs f64 host loops) and
#     gemm_bench (the runtime's cuBLASLt path: self-test of every
#     transpose/bias/batch case vs an f64 reference, then TFLOP/s). These need
#     only nvcc, so they run even when braid-run does not build yet.
#  2. Builds the runtime standalone (runtime/ needs no LLVM/MLIR, which the
#     device machine lacks): CPU and CUDA libraries (+ braid_comm_nccl), runs
#     kernel-rates-cuda and fits the compute calibration to it
#     (bench/planner/calibrate.py: h200-sxm-measured.json in $OUT), then
#     bench/gpu/nccl_smoke.cu: a 1-rank NCCL world through the file store,
#     every collective checked on device buffers (60 s limit).
#  3. Per tiny preset (gpt/llama/mamba/moe/hybrid): the program emitted by
#     bench/gpu/prepare.sh (run where the compiler builds; its output folder
#     $PREP, default build/gpu-check-src, is carried to the device) built with
#     the host compiler and with nvcc, each run with --dump and --trace;
#     compares the losses and every dumped tensor (max relative difference,
#     per model), and prints the CUDA trace summary (top kernels, GEMM TFLOP/s
#     from the FLOPs trace events carry).
#  4. A small llama3-8b slice compared CPU vs CUDA, and the medium
#     llama3-8b --layers 2 --seq 1024 --batch 4 on CUDA only (timing, trace);
#     MEDIUM_CPU=1 also runs it on the CPU (slow) and compares.
#
# Environment: BUILD_DIR (default build), PREP (prepared programs, default
# $BUILD_DIR/gpu-check-src), CHECK_DIR (work dir, default $BUILD_DIR/gpu-check;
# results are also copied to $OUT when set), TOL (default 1e-3), JOBS,
# CHECK_SKIP (sections to leave out, by the names want() takes below).
# shellcheck source=bench/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
TOL=${TOL:-1e-3}

# CHECK_SKIP="selftests calibration ...": sections left out (a rerun in what is
# left of a device lease): selftests, calibration, nccl, tiny, slice, medium.
want() { [[ " ${CHECK_SKIP:-} " != *" $1 "* ]] || { echo "  skipped (CHECK_SKIP)"; return 1; }; }

section "device"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader 2>&1 | head -4
"$NVCC" --version | tail -1

section "kernel self-tests and gemm_bench (runtime/src/cuda linked with a null context)"
if want selftests; then
  # g++-12 as nvcc's host compiler where it exists (Debian here); else nvcc's default.
  HOSTCXX_FLAG=()
  command -v g++-12 >/dev/null && HOSTCXX_FLAG=(-ccbin g++-12)
  NVFLAGS=(-O2 -std=c++17 "${HOSTCXX_FLAG[@]}" -gencode arch=compute_90,code=sm_90 -I runtime/include
           -I runtime/src -DBRAID_RUNTIME_CUDA)
  OBJ="$CHECK_DIR/obj"
  mkdir -p "$OBJ"
  export NVCC OBJ
  # shellcheck disable=SC2016
  if printf '%s\n' runtime/src/cuda/*.cu bench/gpu/gemm_bench.cu bench/gpu/kernel_test.cu \
      bench/gpu/kernel_grad_test.cu |
      timeout 150 xargs -P "$JOBS" -I{} sh -c \
        '"$NVCC" '"${NVFLAGS[*]}"' -c "$1" -o "$OBJ/$(basename "$1" .cu).o"' _ {}; then
    LIB_OBJS=()
    for f in runtime/src/cuda/*.cu; do
      [[ $f == */comm_nccl*.cu ]] && continue # needs the runtime core and libnccl: step 2b
      LIB_OBJS+=("$OBJ/$(basename "$f" .cu).o")
    done
    for t in kernel_test kernel_grad_test; do
      "$NVCC" "${NVFLAGS[@]}" "$OBJ/$t.o" "${LIB_OBJS[@]}" -lcublasLt -o "$CHECK_DIR/$t" &&
        { timeout 60 "$CHECK_DIR/$t" || fail "$t"; } || fail "$t link"
    done
    "$NVCC" "${NVFLAGS[@]}" "$OBJ/gemm_bench.o" "$OBJ/gemm_cublaslt.o" -lcublasLt -o "$CHECK_DIR/gemm_bench" &&
      { timeout 90 "$CHECK_DIR/gemm_bench" || fail "gemm_bench"; } || fail "gemm_bench link"
  else
    fail "nvcc build of the CUDA sources / benches"
  fi
  echo "self-tests done at t=$((SECONDS - START))s"
fi


section "build the runtime (CPU and CUDA) from runtime/, standalone"
# shellcheck source=bench/gpu/build-runtime.sh
source bench/gpu/build-runtime.sh
echo "runtime built at t=$((SECONDS - START))s"

section "compute calibration: kernel-rates-cuda, fitted by bench/planner/calibrate.py"
if want calibration; then
  # The planner's, the scheduler's and --braid-print-plan's GEMM, flash and
  # memory-bound rates, measured on this GPU (issue: a calibration mode that
  # fits them from a microbenchmark run on a GPU machine).
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
  cuda=$("$NVCC" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
  if [[ -x "$RT/bin/kernel-rates-cuda" ]] &&
     timeout 120 "$RT/bin/kernel-rates-cuda" --steps 3 --trace "$CHECK_DIR/kernel-rates.json" \
       --quiet > "$CHECK_DIR/kernel-rates.log" 2>&1 &&
     "$PY" bench/planner/calibrate.py "$CHECK_DIR/kernel-rates.json" --hardware h200-sxm \
       --machine "${gpu/, /, driver }, CUDA $cuda" \
       -o "$CHECK_DIR/h200-sxm-measured.json"; then
    [[ -n "${OUT:-}" && -d "${OUT:-}" ]] &&
      cp "$CHECK_DIR/h200-sxm-measured.json" "$CHECK_DIR/kernel-rates.json" "$OUT/" 2>/dev/null
  else
    tail -20 "$CHECK_DIR/kernel-rates.log" 2>/dev/null
    fail "kernel-rates calibration"
  fi
fi


section "NCCL smoke test (1 rank, file-store bootstrap, every collective)"
if want nccl; then
  if [[ ! -f "$RT/lib/libbraid_comm_nccl.a" ]]; then
    fail "nccl_smoke: no libbraid_comm_nccl.a (NCCL not found by the runtime build?)"
  elif "$NVCC" "${NVFLAGS[@]}" bench/gpu/nccl_smoke.cu "$RT/lib/libbraid_comm_nccl.a" \
      "$RT/lib/libbraid_kernels_cuda.a" "$RT/lib/libbraid_runtime.a" -lcublasLt \
      "$NCCL_LIBRARY" -Xlinker -rpath,"$NCCL_LIB_DIR" -o "$CHECK_DIR/nccl_smoke" \
      > "$CHECK_DIR/nccl_smoke.build.log" 2>&1; then
    NCCL_STORE_DIR=$(mktemp -d /tmp/braid-nccl-store.XXXXXX)
    BRAID_NCCL_STORE=$NCCL_STORE_DIR BRAID_WORLD_SIZE=1 BRAID_RANK=0 BRAID_LOCAL_RANK=0 \
      NCCL_DEBUG=${NCCL_DEBUG:-WARN} timeout 60 "$CHECK_DIR/nccl_smoke" \
      > "$CHECK_DIR/nccl_smoke.log" 2>&1
    rc=$?
    cat "$CHECK_DIR/nccl_smoke.log"
    [[ $rc -eq 0 ]] && grep -q '^PASS' "$CHECK_DIR/nccl_smoke.log" || fail "nccl_smoke (exit $rc)"
    [[ -n "${OUT:-}" && -d "${OUT:-}" ]] && cp "$CHECK_DIR/nccl_smoke.log" "$OUT/" 2>/dev/null
  else
    tail -20 "$CHECK_DIR/nccl_smoke.build.log"
    fail "nccl_smoke build"
  fi
fi

if [[ ! -d "$PREP" ]]; then
  fail "no prepared programs in $PREP: run bench/gpu/prepare.sh where the compiler builds, and carry that folder"
  printf '\nRESULT: FAIL (%s)\n' "${FAILURES[*]}"
  exit 1
fi

# main() of the CUDA build links the NCCL communicators when NCCL was found.
NCCL_LIBS=() NCCL_LINK=()
if [[ -f "$RT/lib/libbraid_comm_nccl.a" ]]; then
  NCCL_LIBS=("$RT/lib/libbraid_comm_nccl.a")
  NCCL_LINK=("$NCCL_LIBRARY" -Xlinker -rpath,"$NCCL_LIB_DIR")
fi

# Builds the prepared program NAME for BACKEND (cpu: host C++; cuda: nvcc).
build_program() {
  local name=$1 backend=$2 out="$CHECK_DIR/$1/$2.bin"
  mkdir -p "$CHECK_DIR/$name"
  if [[ $backend == cpu ]]; then
    c++ -std=c++17 -O2 -I runtime/include "$PREP/$name.cpp" -o "$out" \
      "$RT/lib/libbraid_runtime_main.a" "$RT/lib/libbraid_kernels_cpu.a" \
      "$RT/lib/libbraid_runtime.a" "${CPU_BLAS[@]}" -lpthread
  else
    cp "$PREP/$name.cpp" "$CHECK_DIR/$name/program.cu" # nvcc compiles .cu as CUDA
    "$NVCC" -std=c++17 -O2 -gencode arch=compute_90,code=sm_90 -DBRAID_RUNTIME_CUDA \
      "${HOSTCXX_FLAG[@]}" -I runtime/include "$CHECK_DIR/$name/program.cu" -o "$out" \
      "$RT/lib/libbraid_runtime_main_cuda.a" "${NCCL_LIBS[@]}" "$RT/lib/libbraid_kernels_cuda.a" \
      "$RT/lib/libbraid_runtime.a" -lcublasLt -lcudart "${NCCL_LINK[@]}"
  fi
}

run_model() { # NAME BACKEND LIMIT [nodump]
  # Step 1 dumped too: braid-run --verify-from judges the updates from it.
  local name=$1 backend=$2 limit=$3 dump=(--dump "$CHECK_DIR/$1/$2/dump" --dump-first-step)
  # The medium model's dump (every tensor of 2 steps, 2.1 GB per copy of the
  # 128256-token embedding) would fill the device machine's 64 GiB disk.
  [[ ${4:-} == nodump ]] && dump=()
  local dir="$CHECK_DIR/$name/$backend"
  rm -rf "$dir" && mkdir -p "$dir/dump"
  build_program "$name" "$backend" > "$dir/build.log" 2>&1 ||
    { tail -20 "$dir/build.log"; return 1; }
  local t0=$SECONDS
  timeout "$limit" "$CHECK_DIR/$name/$backend.bin" --backend "$backend" --steps 2 \
    "${dump[@]}" --trace "$dir/trace.json" > "$dir/log" 2>&1
  local rc=$?
  cp "$dir/log" "$dir/dump/stdout.txt" # the losses, for --verify-from
  echo "  $name/$backend: exit $rc in $((SECONDS - t0)) s: $(grep -E '^step 2 loss' "$dir/log")"
  if [[ $rc -ne 0 ]]; then tail -5 "$dir/log" | sed 's/^/    /'; fi
  return $rc
}

gen_model() { # NAME ...: the prepared program must exist
  [[ -f "$PREP/$1.cpp" ]] || { fail "not prepared: $1"; return 1; }
}

compare_model() { # NAME
  local name=$1
  "$PY" bench/gpu/compare.py "$CHECK_DIR/$name/cpu/dump" "$CHECK_DIR/$name/cuda/dump" \
    --cpu-log "$CHECK_DIR/$name/cpu/log" --cuda-log "$CHECK_DIR/$name/cuda/log" \
    --tol "$TOL" --model "$name" || fail "compare $name"
}

section "tiny presets: CPU vs CUDA"
if want tiny; then
  for preset in gpt-tiny llama-tiny mamba-tiny moe-tiny hybrid-tiny; do
    gen_model "$preset" "$preset" || continue
    run_model "$preset" cpu 60 || { fail "$preset cpu"; continue; }
    run_model "$preset" cuda 60 || { fail "$preset cuda"; continue; }
    compare_model "$preset"
  done
fi


section "llama3-8b slice (1 layer, seq 128, batch 1): CPU vs CUDA"
if want slice && gen_model llama3-8b-slice llama3-8b --layers 1 --seq 128 --batch 1; then
  if run_model llama3-8b-slice cuda 60; then
    run_model llama3-8b-slice cpu 90 && compare_model llama3-8b-slice ||
      echo "  (CPU run did not finish: not compared)"
  else
    fail "llama3-8b-slice cuda"
  fi
fi

section "medium: llama3-8b --layers 2 --seq 1024 --batch 4 (CUDA; f32 and bf16)"
if want medium; then
  if gen_model llama3-8b-medium llama3-8b --layers 2 --seq 1024 --batch 4; then
    run_model llama3-8b-medium cuda 90 "$([[ ${MEDIUM_CPU:-0} == 1 ]] || echo nodump)" ||
      fail "llama3-8b-medium cuda"
    if [[ "${MEDIUM_CPU:-0}" == 1 ]]; then
      run_model llama3-8b-medium cpu 600 && compare_model llama3-8b-medium
    fi
  fi
  if gen_model llama3-8b-medium-bf16 llama3-8b --layers 2 --seq 1024 --batch 4 --dtype bf16; then
    run_model llama3-8b-medium-bf16 cuda 90 nodump || fail "llama3-8b-medium-bf16 cuda"
  fi
fi


section "CUDA traces"
for name in gpt-tiny llama-tiny mamba-tiny moe-tiny hybrid-tiny llama3-8b-slice llama3-8b-medium \
    llama3-8b-medium-bf16; do
  trace="$CHECK_DIR/$name/cuda/trace.json"
  [[ -s "$trace" ]] && "$PY" bench/gpu/trace_summary.py "$trace" --model "$name" --top 8
done

if [[ -n "${OUT:-}" && -d "${OUT:-}" ]]; then # the device tool brings $OUT back
  for name in "$CHECK_DIR"/*/; do
    n=$(basename "$name")
    mkdir -p "$OUT/$n"
    cp "$name"/*/log "$OUT/$n/" 2>/dev/null
    cp "$name"/cuda/trace.json "$OUT/$n/" 2>/dev/null
  done
fi

finish
