#!/usr/bin/env python3
"""The serving cost model against braid-run's decode and prefill on CPU ranks.

The issue's check "against Braid itself" (as bench/overlap does for
training): measure the machine, write a CPU hardware description of it, ask
`braid-plan --inference --evaluate tp=1 --dtype f32` for the prefill time of
a prompt and the decode step at batch B, and run `braid-run --generate` on
the same Llama, prompt, output and batch; print predicted against measured.

  PYTHONPATH=python python3 bench/planner/cpu_inference.py [--threads 2] [--quick]

The description (written to the temporary directory, printed):
  - peak_bf16_flops: Braid's own f32 linear kernel (braid_k_linear of
    build/lib/libbraid_kernels_cpu.so, BLAS with f32 accumulation) over a
    layer's seven products at the prompt's rows (their FLOPs over the sum of
    their best times); the
    calibration takes it whole (gemm_efficiency 1); for a batch > 1 the
    same products at the batch's rows too, gemm_half_dim put through the two
    (0 where the smaller product is not slower);
  - flash_forward_efficiency: braid_k_cache_attention's rate over a causal
    prompt of the row's length (positions 0, the cache holding the prompt),
    as a fraction of that GEMM rate;
  - hbm_bytes_per_s: the rate at which braid_k_linear streams a layer's
    weights at the decode batch's rows, called as the decode programs call
    it (BRAID_LINEAR_ROWS_APART: the weights streamed once for the rows, not
    packed for sgemm), over copies of the layer filling 512 MiB (twice the
    260 MiB L3 of the machine this was written on), so that every product
    reads its weights from DRAM as a decode step does (copy_bw.c's read
    bandwidth is printed beside it: on a shared machine it swings 9-27 GB/s
    with the other tenants' load), divided by the serving model's
    decode efficiency (kDecodeMemoryEfficiency, 0.76, a GPU figure) so that
    the model's decode reads at exactly the measured rate;
  - kernel_launch_s 0: CPU kernels are calls, not launches.
The machine is measured again before each row, and every measurement (the
bandwidth, the GEMM rate, each braid-run) is the best of --repeats runs: on a
shared machine the other tenants only ever slow a run down, so the best is
the nearest to the machine alone. Nothing is fitted to braid-run's times. The decode step is braid-run's median
ms per step over `--generate N` (the cache at prompt .. prompt + N), the
model's at the mean context prompt + N / 2; prefill is braid-run's prefill
seconds of the batch's prompts against the model's TTFT of the same static
batch.
"""
import argparse
import ctypes
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "bench")]

import machine  # noqa: E402

_spec = importlib.util.spec_from_file_location("inference_run", ROOT / "bench/inference/run.py")
inference = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(inference)

# The serving model's decode reads at this fraction of a description's
# bandwidth (lib/Planner/InferenceCost.cpp).
DECODE_MEMORY_EFFICIENCY = 0.76

# A ~200M-parameter Llama (f32, 0.8 GB): three times the 260 MiB L3 of the
# 2-core Xeon this was written on, so a decode step streams its weights from
# DRAM as copy_bw.c's 1 GiB buffer does (a 56M model, 0.22 GB, decoded out of
# the L3 at up to twice copy_bw.c's rate); small enough that each braid-run
# takes seconds.
MODELS = {
    "full": dict(name="llama-200m", layers=12, hidden=1024, heads=16, kv_heads=4, ffn=2816,
                 vocab=32000),
    "quick": dict(name="llama-quick", layers=2, hidden=256, heads=4, kv_heads=2, ffn=704,
                  vocab=4096),
}
# (batch, prompt, steps) per row.
ROWS = {
    "full": [(1, 256, 32), (8, 128, 32), (1, 1024, 8)],
    "quick": [(1, 32, 8), (4, 32, 8)],
}


# braid_k_linear's flag for a decode step's rows (runtime.h): each row its own
# sequence, so the kernel streams the weights once for a few rows
# (few_rows_linear.h) instead of packing them for sgemm, as the decode
# programs call it; a prompt's rows (prefill) are one sequence's and go to
# sgemm (flags 0).
ROWS_APART = 2


def kernel_rates(lib_path, rows, shapes, attention, threads, reps=5, flags=0, stream_rows=1):
    """(GEMM FLOP/s, attention FLOP/s, GEMV bytes/s) of Braid's CPU kernels, in a child with
    BRAID_CPU_THREADS set: braid_k_linear (f32) over a layer's products (k, n)
    at `rows` rows, their FLOPs over the sum of each one's best of `reps`;
    braid_k_cache_attention of a `rows`-token prompt over its own cache
    (positions 0: causal) with `attention` = (heads, kv_heads, head_dim),
    2 rows^2 heads head_dim FLOPs (QK^T and PV over the causal half, as the
    serving model counts them) over its best of `reps`; braid_k_linear of
    `stream_rows` rows (ROWS_APART) over copies of the layer's weights
    filling 512 MiB, the bytes over its best of `reps` (the stream)."""
    heads, kv_heads, head_dim = attention
    code = f"""
import ctypes, time, numpy as np
lib = ctypes.CDLL({str(lib_path)!r})
P, I, D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
lib.braid_k_linear.argtypes = [P, ctypes.c_int, P, P, P, P, I, I, I, ctypes.c_int32]
class Shape(ctypes.Structure):  # braid_cache_attention_shape (runtime_inference.h)
    _fields_ = [(n, I) for n in ("batch", "seq", "cache_len", "heads", "kv_heads", "head_dim",
                                 "v_head_dim")] + [("scale", D), ("rope_theta", D)]
lib.braid_k_cache_attention.argtypes = [P, ctypes.c_int, P, P, P, P, P, ctypes.POINTER(Shape)]
rng = np.random.default_rng(0)
def best(call):
    b = float("inf")
    for _ in range({reps}):
        t = time.perf_counter()
        call()
        b = min(b, time.perf_counter() - t)
    return b
total = 0.0
for k, n in {shapes!r}:
    x = rng.standard_normal(({rows}, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    y = np.empty(({rows}, n), np.float32)
    total += best(lambda: lib.braid_k_linear(None, 0, x.ctypes.data, w.ctypes.data, None,
                                             y.ctypes.data, {rows}, k, n, {flags}))
q = rng.standard_normal((1, {rows}, {heads}, {head_dim})).astype(np.float32)
kc, vc = (rng.standard_normal((1, {rows}, {kv_heads}, {head_dim})).astype(np.float32)
          for _ in range(2))
o = np.empty_like(q)
pos = np.zeros(1, np.int32)
shape = Shape(1, {rows}, {rows}, {heads}, {kv_heads}, {head_dim}, {head_dim},
              {head_dim} ** -0.5, 10000.0)
att = best(lambda: lib.braid_k_cache_attention(None, 0, q.ctypes.data, kc.ctypes.data,
                                               vc.ctypes.data, pos.ctypes.data, o.ctypes.data,
                                               ctypes.byref(shape)))
# The decode step's weight stream: the layer's products at the decode
# batch's rows, as the decode programs call them (ROWS_APART), over copies
# of the layer's weights filling 512 MiB (twice the L3 of the machine this
# was written on), each read once per pass from DRAM, as a decode step
# reads every layer's.
layer = sum(k * n * 4 for k, n in {shapes!r})
copies = max(1, (512 << 20) // layer)
ws = [[np.ones((k, n), np.float32) for k, n in {shapes!r}] for _ in range(copies)]
xs = {{k: np.ones(({stream_rows}, k), np.float32) for k, _ in {shapes!r}}}
ys = {{n: np.empty(({stream_rows}, n), np.float32) for _, n in {shapes!r}}}
def stream():
    for copy in ws:
        for (k, n), w in zip({shapes!r}, copy):
            lib.braid_k_linear(None, 0, xs[k].ctypes.data, w.ctypes.data, None,
                               ys[n].ctypes.data, {stream_rows}, k, n, {ROWS_APART})
print(total, att, copies * layer / best(stream))
"""
    env = dict(os.environ, BRAID_CPU_THREADS=str(threads))
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout
    linear_s, attention_s, stream = (float(v) for v in out.split())
    flops = sum(2.0 * rows * k * n for k, n in shapes)
    return flops / linear_s, 2.0 * rows * rows * heads * head_dim / attention_s, stream


def describe(tmp, flops, half, attention_flops, read_bytes_per_s):
    hardware = pathlib.Path(tmp) / "cpu-ranks.json"
    calibration = pathlib.Path(tmp) / "cpu-ranks-calibration.json"
    source = "bench/planner/cpu_inference.py, measured on " + machine.describe()
    hardware.write_text(json.dumps({
        "name": "cpu-ranks", "description": "these CPU ranks, as measured",
        "devices_per_node": 1, "memory_bytes": 64e9, "peak_bf16_flops": flops,
        "hbm_bytes_per_s": read_bytes_per_s / DECODE_MEMORY_EFFICIENCY,
        "collective_latency_s": 0, "kernel_launch_s": 0,
        "intra_node": {"kind": "emulated", "bytes_per_s": 1e9, "step_latency_s": 0},
        "inter_node": {"kind": "emulated", "bytes_per_s": 1e9, "step_latency_s": 0},
        "sources": [source]}))
    calibration.write_text(json.dumps({
        "hardware": "cpu-ranks", "gemm_efficiency": 1, "gemm_half_dim": half,
        "flash_forward_efficiency": min(1.0, attention_flops / flops),
        "flash_backward_efficiency": 1,
        "memory_efficiency": DECODE_MEMORY_EFFICIENCY, "scan_efficiency": 1,
        "reserved_bytes": 0, "sources": [source]}))
    return hardware, calibration


def predict(args, spec, hardware, calibration, batch, prompt, steps):
    cmd = [str(args.build / "bin" / "braid-plan"), "--inference", "--model", spec, "--gpus", "1",
           "--hardware", str(hardware), "--calibration", str(calibration), "--prompt",
           str(prompt), "--output", str(steps), "--dtype", "f32", "--batching", "static",
           "--batch", str(batch), "--evaluate", "tp=1", "--format", "json"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr.strip())
    r = json.loads(out.stdout)["layouts"][0]
    return r["ttft_ms"] / 1e3, r["decode_step"]["total_ms"]


def layer_shapes(c):
    """(k, n) of a Llama layer's products as braid-run's kernels run them."""
    h, hd = c["hidden"], c["hidden"] // c["heads"]
    kv = c["kv_heads"] * hd
    return [(h, h), (h, kv), (h, kv), (h, h), (h, c["ffn"]), (h, c["ffn"]), (c["ffn"], h)]


def measure_machine(args, tmp, rows, batch, c):
    """(copy_bw.c's read bytes/s, the GEMV's bytes/s, GEMM peak FLOP/s, half
    dim, attention FLOP/s), each the best of args.repeats. The GEMM rate is
    measured at the prompt's rows and, for a batch > 1, at the decode step's
    rows too; the serving model's rate(r) = peak r / (r + half) is put through
    both (half 0 where the smaller product is not slower)."""
    lib = args.build / "lib" / "libbraid_kernels_cpu.so"
    attention = (c["heads"], c["kv_heads"], c["hidden"] // c["heads"])
    read_bw, stream, flops, small, attention_flops = 0.0, 0.0, 0.0, 0.0, 0.0
    for _ in range(args.repeats):
        read_bw = max(read_bw, inference.copy_bandwidth(args, tmp)[1] * 1e9)
        g, a, b = kernel_rates(lib, rows, layer_shapes(c), attention, args.threads,
                               stream_rows=batch)
        flops, attention_flops, stream = max(flops, g), max(attention_flops, a), max(stream, b)
        if 1 < batch < rows:
            small = max(small, kernel_rates(lib, batch, layer_shapes(c), attention,
                                            args.threads, flags=ROWS_APART)[0])
    half = 0.0
    rho = small / flops
    if 1 < batch < rows and rho < 1:
        half = max(0.0, rows * batch * (1 - rho) / (rho * rows - batch))
    return read_bw, stream, flops * (rows + half) / rows, half, attention_flops


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", type=pathlib.Path, default=ROOT / "build")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeats", type=int, default=3,
                    help="runs of each measurement; the best is kept (a shared machine's "
                         "other tenants only slow a run down)")
    ap.add_argument("--quick", action="store_true", help="a 2-layer model, short runs")
    args = ap.parse_args()
    mode = "quick" if args.quick else "full"
    overrides = MODELS[mode]
    args.sizes = dict(copy_mib=256 if args.quick else 1024)
    args.timeout = 600
    model = inference.Model("llama", "llama-tiny", overrides)
    c = model.cfg
    spec = (f"family=llama,hidden={c['hidden']},layers={c['layers']},heads={c['heads']},"
            f"kv_heads={c['kv_heads']},ffn={c['ffn']},vocab={c['vocab']},seq=4096")
    print(f"machine: {machine.describe()}; {args.threads} threads; best of {args.repeats} for "
          f"every measurement; load average {os.getloadavg()[0]:.2f} at the start")
    print(f"model: {overrides['name']} ({model.params / 1e6:.0f}M parameters, f32), "
          f"braid-plan --model {spec}")
    print("per row: the machine measured just before (read: copy_bw.c's read bandwidth, GB/s, "
          "for reference; stream: braid_k_linear over 512 MiB of copies of a layer's weights "
          "at the decode batch's rows, as decode calls it, GB/s, the description's bandwidth; "
          "braid_k_linear's f32 rate over a layer's products at the prompt's rows, and at the "
          "batch's rows for half, the rows at which the rate is half its peak; "
          "braid_k_cache_attention's rate over the prompt, attn), written as the CPU "
          "description braid-plan --inference --evaluate tp=1 --dtype f32 reads")
    print(f"{'batch':>5s} {'prompt':>6s} {'steps':>5s} {'read':>5s} {'stream':>6s} {'GFLOP/s':>8s} "
          f"{'half':>5s} {'attn':>6s}  "
          f"{'decode ms/step':>14s} {'pred':>8s} {'ratio':>6s}  {'prefill ms':>10s} {'pred':>8s} "
          f"{'ratio':>6s}")
    worst = 0.0
    with tempfile.TemporaryDirectory(prefix="braid-cpu-inference-") as tmp:
        for batch, prompt, steps in ROWS[mode]:
            read_bw, stream, flops, half, attention_flops = measure_machine(args, tmp, prompt,
                                                                            batch, c)
            hardware, calibration = describe(tmp, flops, half, attention_flops, stream)
            runs = [inference.braid_generate(args, model, tmp, batch, prompt, steps)
                    for _ in range(args.repeats)]
            prefill_s = min(r[0] for r in runs)
            decode_ms = min(r[1] for r in runs)
            ttft_s, step_ms = predict(args, spec, hardware, calibration, batch, prompt, steps)
            rd, rp = step_ms / decode_ms, ttft_s / prefill_s
            worst = max(worst, abs(rd - 1), abs(rp - 1))
            print(f"{batch:5d} {prompt:6d} {steps:5d} {read_bw / 1e9:5.1f} {stream / 1e9:6.1f} "
                  f"{flops / 1e9:8.1f} "
                  f"{half:5.1f} {attention_flops / 1e9:6.1f}  "
                  f"{decode_ms:14.2f} {step_ms:8.2f} {rd:6.3f}  {1e3 * prefill_s:10.1f} "
                  f"{1e3 * ttft_s:8.1f} {rp:6.3f}", flush=True)
    print(f"ratio = predicted / measured; worst |ratio - 1| {100 * worst:.1f}% "
          f"(the issue's target: within 20%); load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    sys.exit(main())
