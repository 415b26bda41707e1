#!/usr/bin/env bash
# bench/gpu/ranks.sh - GPU ranks over real NCCL on the device machine's one
# GPU: the programs bench/gpu/prepare.sh emitted as ranks-*.cpp, linked with
# the runtime check.sh built in $CHECK_DIR/runtime-build (built here when
# absent: bench/gpu/build-runtime.sh). Target: under 2 minutes.
#
# NCCL refuses two ranks of one communicator on one GPU of one host, so each
# rank here gets its own NCCL_HOSTID: NCCL then takes the ranks for separate
# nodes and connects them through its socket transport on loopback, with the
# ranks' buffers on the same GPU. That runs the provider's whole GPU path
# (file-store bootstrap, communicator splits, the per-neighbour edge
# communicators, the communication stream and its events) with the network
# transport in place of NVLink; it says nothing about NVLink speed.
#
# Each plan runs 2 steps with --trace and the dumps braid-run --verify asks
# of its runs, as does the unpartitioned program of the same model on one
# rank of the same GPU; the losses are compared here, and the dumps (about
# 40 MB in all) go back to be judged by braid-run --verify-from where the
# compiler builds (bench/gpu/judge.sh).
#
# Environment: as check.sh (BUILD_DIR, PREP, CHECK_DIR, JOBS, NVCC).
# shellcheck source=bench/gpu/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
RT="$CHECK_DIR/runtime-build"
WORK="$CHECK_DIR/ranks"

# The runtime check.sh built, else built here.
if [[ ! -f $RT/lib/libbraid_comm_nccl.a || ! -f $RT/lib/libbraid_runtime_main_cuda.a ]]; then
  section "build the runtime (CPU and CUDA) from runtime/, standalone"
  # shellcheck source=bench/gpu/build-runtime.sh
  source bench/gpu/build-runtime.sh
fi
NCCL_LIBRARY=$(sed -n 's/^BRAID_NCCL_LIBRARY:FILEPATH=//p' "$RT/CMakeCache.txt" 2>/dev/null)
if [[ ! -f $RT/lib/libbraid_comm_nccl.a || -z $NCCL_LIBRARY || $NCCL_LIBRARY == *NOTFOUND ]]; then
  echo "RESULT: FAIL (no NCCL communicators in $RT)"
  exit 1
fi
HOSTCXX_FLAG=()
command -v g++-12 >/dev/null && HOSTCXX_FLAG=(-ccbin g++-12)
mkdir -p "$WORK"

# NAME MODEL_SOURCE: builds one program (a stage's or the whole model's).
build_one() {
  local src=$1 out=$2
  cp "$src" "${out%.bin}.cu" # nvcc compiles .cu as CUDA
  "$NVCC" -std=c++17 -O2 -gencode arch=compute_90,code=sm_90 -DBRAID_RUNTIME_CUDA \
    "${HOSTCXX_FLAG[@]}" -I runtime/include "${out%.bin}.cu" -o "$out" \
    "$RT/lib/libbraid_runtime_main_cuda.a" "$RT/lib/libbraid_comm_nccl.a" \
    "$RT/lib/libbraid_kernels_cuda.a" "$RT/lib/libbraid_runtime.a" -lcublasLt -lcudart \
    "$NCCL_LIBRARY" -Xlinker -rpath,"$(dirname "$NCCL_LIBRARY")" > "${out%.bin}.build.log" 2>&1 ||
    { echo "build of $src failed:"; tail -n 15 "${out%.bin}.build.log"; return 1; }
}
export -f build_one
export NVCC RT NCCL_LIBRARY
export HOSTCXX_FLAG_TEXT="${HOSTCXX_FLAG[*]}"

section "build every prepared program ($JOBS at a time)"
mapfile -t SOURCES < <(ls "$PREP"/ranks-*.cpp 2>/dev/null)
if ((${#SOURCES[@]} == 0)); then
  echo "RESULT: FAIL (no ranks-*.cpp in $PREP: run bench/gpu/prepare.sh where the compiler builds)"
  exit 1
fi
printf '%s\n' "${SOURCES[@]}" |
  timeout 300 xargs -P "$JOBS" -I{} bash -c \
    'HOSTCXX_FLAG=($HOSTCXX_FLAG_TEXT); build_one "$1" "$0/$(basename "$1" .cpp).bin"' "$WORK" {} ||
  fail "program builds"

# NAME RANKS [LIMIT]: runs the plan NAME on RANKS processes of GPU 0 (a
# pipeline: rank r runs the program of stage r / (RANKS / stages), pp being
# outermost), with the arguments braid-run --verify gives a partitioned run
# (one rank: those of its 1-rank run), so that braid-run --verify-from can
# judge $WORK/NAME/dump: the dumps, and every rank's stdout in stdout.txt.
run_plan() {
  local name=$1 n=$2 limit=${3:-45}
  local dir="$WORK/$name" store stages args=(--dump-first-step)
  rm -rf "$dir" && mkdir -p "$dir/dump"
  ((n > 1)) && args+=(--check-replicas)
  store=$(mktemp -d /tmp/braid-nccl-store.XXXXXX)
  stages=$(ls "$WORK/$name".stage*.bin 2>/dev/null | wc -l)
  local pids=() r bin t0=$SECONDS
  for ((r = 0; r < n; r++)); do
    bin="$WORK/$name.bin"
    ((stages > 0)) && bin="$WORK/$name.stage$((r / (n / stages))).bin"
    [[ -x $bin ]] || { echo "  $name: no program $bin"; return 1; }
    local launch=() # one rank: a plain process, no NCCL
    ((n > 1)) && launch=(env BRAID_NCCL_STORE="$store" BRAID_WORLD_SIZE="$n" BRAID_RANK="$r"
      BRAID_LOCAL_RANK=0 NCCL_HOSTID="braid-rank-$r" NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
      NCCL_DEBUG="${NCCL_DEBUG:-WARN}")
    "${launch[@]}" timeout "$limit" "$bin" --backend cuda --steps 2 --dump "$dir/dump" \
      "${args[@]}" --trace "$dir/trace.json" > "$dir/out.rank$r" 2> "$dir/err.rank$r" &
    pids+=($!)
  done
  local rc=0 p
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  rm -rf "$store"
  for ((r = 0; r < n; r++)); do cat "$dir/out.rank$r"; done > "$dir/dump/stdout.txt"
  echo "  $name on $n ranks: exit $rc in $((SECONDS - t0)) s:" \
    "$(grep -h -E '^step [0-9]+ loss' "$dir/out.rank0" | tr '\n' ' ')"
  if ((rc != 0)); then
    for ((r = 0; r < n; r++)); do
      tail -n 4 "$dir/out.rank$r" "$dir/err.rank$r" | sed "s/^/    rank $r: /"
    done
  fi
  return $rc
}

# REFERENCE PLAN [F32-REFERENCE]: the plan's losses against its model's on
# one rank (a quick look here, at f32 within --verify's default 1e-5; at bf16
# only printed, the bounds being --verify's to derive), and the names of the
# 1-rank runs judge.sh puts where --verify-from looks for them (DIR/reference,
# a bf16 plan's f32 run in DIR/reference-f32).
losses_agree() {
  echo "$1 ${3:-}" > "$WORK/$2/references"
  "$PY" - "$WORK/$1/dump/stdout.txt" "$WORK/$2/dump/stdout.txt" "$2" "${3:+rounded}" <<'PY'
import re, sys
def losses(path):
    return {int(k): float(v) for k, v in re.findall(r"^step (\d+) loss (\S+)$", open(path).read(), re.M)}
ref, plan = losses(sys.argv[1]), losses(sys.argv[2])
worst = max((abs(plan[k] - ref[k]) / max(abs(ref[k]), 1e-30) for k in ref if k in plan), default=float("inf"))
judged = sys.argv[4] != "rounded"
ok = set(ref) == set(plan) and (worst <= 1e-5 or not judged)
print(f"  {sys.argv[3]}: losses of {len(ref)} steps against one rank: worst relative difference {worst:.2e} "
      + (("ok" if ok else "FAIL") if judged else "(reduced precision: judged by --verify-from)"))
sys.exit(0 if ok else 1)
PY
}

section "references: each model on one rank"
for ref in ranks-gpt ranks-llama ranks-llama-bf16 ranks-moe; do
  run_plan "$ref" 1 || fail "$ref"
done

section "plans on NCCL ranks of one GPU, each against its model on one rank"
plan() { # REFERENCE PLAN RANKS [F32-REFERENCE]
  run_plan "$2" "$3" && losses_agree "$1" "$2" "${4:-}" || fail "$2"
}
plan ranks-gpt ranks-gpt-pp2 2
plan ranks-gpt ranks-gpt-pp2v2 2
plan ranks-llama ranks-llama-dp2 2
plan ranks-llama ranks-llama-tp2 2
plan ranks-llama ranks-llama-cp2 2
plan ranks-llama ranks-llama-dp2tp2 4
plan ranks-llama-bf16 ranks-llama-dp2tp2-bf16 4 ranks-llama
plan ranks-moe ranks-moe-dp2ep2 4
echo "  judge them where the compiler builds: bench/gpu/judge.sh (braid-run --verify-from)"
# Only what --verify-from reads goes back (the activations stay here).
"$PY" bench/gpu/prune_dumps.py "$WORK"/*/dump | sed 's/^/  /'


section "traces: rank 0 of the 1F1B pipeline and of dp2×tp2 (compute and communication streams)"
for t in "$WORK/ranks-gpt-pp2/trace.rank0.json" "$WORK/ranks-llama-dp2tp2/trace.rank0.json"; do
  [[ -s $t ]] && "$PY" bench/gpu/trace_summary.py "$t" --model "$(basename "$(dirname "$t")")" --top 6
done

finish
