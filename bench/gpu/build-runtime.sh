# bench/gpu/build-runtime.sh - sourced by check.sh and ranks.sh on the device
# machine: builds the runtime standalone from runtime/ (it needs no
# LLVM/MLIR, which that machine lacks), CPU and CUDA, with the NCCL
# communicators when NCCL is found, into $CHECK_DIR/runtime-build.
# Reads CHECK_DIR, NVCC, PY, JOBS and the caller's fail(); sets RT,
# NCCL_LIBRARY and NCCL_LIB_DIR (empty without NCCL) and CPU_BLAS (what a CPU
# program links besides the runtime).
RT="$CHECK_DIR/runtime-build"
mkdir -p "$CHECK_DIR"
CUDA_HOST=()
command -v g++-12 >/dev/null && CUDA_HOST=(-DCMAKE_CUDA_HOST_COMPILER=g++-12)
# NCCL: the CUDA toolkit's where it has one (this project's machines), else the
# one PyTorch's wheels carry (nvidia-nccl-cu13: lib/libnccl.so.2 and
# include/nccl.h, no unversioned libnccl.so, so it is linked by its path).
NCCL_LIBRARY=${NCCL_LIBRARY:-} NCCL_LIB_DIR=
for cand in /usr/local/cuda/lib/libnccl.so /usr/local/cuda/lib64/libnccl.so \
    /usr/lib/x86_64-linux-gnu/libnccl.so; do
  [[ -z $NCCL_LIBRARY && -e $cand ]] && NCCL_LIBRARY=$cand
done
if [[ -z $NCCL_LIBRARY ]]; then
  NCCL_LIBRARY=$("$PY" -c 'import glob, os, sys
hits = [f for p in sys.path if p for f in sorted(glob.glob(os.path.join(p, "nvidia", "**", "libnccl.so*"), recursive=True))]
print(hits[0] if hits else "")' 2>/dev/null)
fi
NCCL_CMAKE=()
if [[ -n $NCCL_LIBRARY ]]; then
  NCCL_LIB_DIR=$(dirname "$NCCL_LIBRARY")
  NCCL_INCLUDE=${NCCL_INCLUDE:-$(dirname "$NCCL_LIB_DIR")/include}
  [[ -f $NCCL_INCLUDE/nccl.h ]] || NCCL_INCLUDE=/usr/local/cuda/include
  NCCL_CMAKE=(-DBRAID_NCCL_LIBRARY="$NCCL_LIBRARY" -DBRAID_NCCL_INCLUDE_DIR="$NCCL_INCLUDE")
  echo "NCCL: $NCCL_LIBRARY ($(grep -m1 -E '^#define NCCL_VERSION_CODE' "$NCCL_INCLUDE/nccl.h" 2>/dev/null))"
else
  echo "NCCL: not found"
fi
# Only what the check links: the cudasim and MPI targets are for CPU machines.
RT_TARGETS=(braid_runtime braid_runtime_main braid_kernels_cpu braid_kernels_cuda
            braid_runtime_main_cuda kernel-rates-cuda)
if ! timeout 200 cmake -S runtime -B "$RT" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DBRAID_HAVE_CUDA=ON -DCMAKE_CUDA_COMPILER="$NVCC" "${CUDA_HOST[@]}" "${NCCL_CMAKE[@]}" \
      > "$CHECK_DIR/cmake.log" 2>&1; then
  tail -n 30 "$CHECK_DIR/cmake.log"
  fail "runtime configure"
else
  grep -E '^-- Braid runtime' "$CHECK_DIR/cmake.log"
  grep -q '^braid_comm_nccl:' <(ninja -C "$RT" -t targets all 2>/dev/null) &&
    RT_TARGETS+=(braid_comm_nccl)
  if ! timeout 300 cmake --build "$RT" -j "$JOBS" --target "${RT_TARGETS[@]}" \
      > "$CHECK_DIR/build.log" 2>&1; then
    tail -n 30 "$CHECK_DIR/build.log"
    fail "runtime build"
  fi
fi
# A CPU program links OpenBLAS when the runtime build found it.
CPU_BLAS=()
blas=$(sed -n 's/^BRAID_OPENBLAS_LIBRARY:FILEPATH=//p' "$RT/CMakeCache.txt" 2>/dev/null)
[[ -n $blas && $blas != *NOTFOUND ]] && CPU_BLAS=("$blas" -Wl,-rpath,"$(dirname "$blas")")
