"""The CPU linear kernel per storage type: f32, bf16 and f16 storage, each
through BLAS (the default, f32 accumulation) and through the f64-accumulating
reference kernel (BRAID_CPU_ACCUMULATE=f64), in one run.

Each mode runs in a child process (the accumulation is read once per
process). Prints milliseconds, GFLOP/s and each type's ratio to f32 through
BLAS, with the machine named.

usage: BRAID_CPU_THREADS=2 python3 bench/cpu/gemm_types.py [--lib build/lib/libbraid_kernels_cpu.so]
           [--shape 2048,768,2304] [--reps 5]
"""
import argparse
import ctypes
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import machine  # noqa: E402

TYPES = [("f32", 0), ("bf16", 1), ("f16", 2)]


def storage(x, code):
    if code == 1:   # bf16: the upper 16 bits (the draws are rounded by truncation)
        return (x.view(np.uint32) >> 16).astype(np.uint16)
    return x.astype(np.float16) if code == 2 else x


def child(lib_path, rows, k, n, reps):
    lib = ctypes.CDLL(lib_path)
    P, I = ctypes.c_void_p, ctypes.c_int64
    lib.braid_k_linear.argtypes = [P, ctypes.c_int, P, P, P, P, I, I, I, ctypes.c_int32]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, k)).astype(np.float32)
    w = rng.standard_normal((k, n)).astype(np.float32)
    for name, code in TYPES:
        xs, ws = storage(x, code), storage(w, code)
        y = np.empty((rows, n), xs.dtype)
        best = float("inf")
        for _ in range(reps):
            t = time.perf_counter()
            lib.braid_k_linear(None, code, xs.ctypes.data, ws.ctypes.data, None, y.ctypes.data,
                               rows, k, n, 0)
            best = min(best, time.perf_counter() - t)
        print(name, best)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default="build/lib/libbraid_kernels_cpu.so")
    ap.add_argument("--shape", default="2048,768,2304", help="rows,k,n of y = x W")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    rows, k, n = (int(v) for v in args.shape.split(","))
    if args.child:
        return child(args.lib, rows, k, n, args.reps)
    results = {}
    for mode in ("f32", "f64"):
        env = dict(os.environ, BRAID_CPU_ACCUMULATE=mode)
        out = subprocess.run([sys.executable, __file__, "--child", "--lib", args.lib, "--shape",
                              args.shape, "--reps", str(args.reps)], env=env, check=True,
                             capture_output=True, text=True).stdout
        for line in out.split("\n"):
            if line:
                name, secs = line.split()
                results[(name, mode)] = float(secs)
    threads = os.environ.get("BRAID_CPU_THREADS", "-")
    print(f"machine: {machine.describe()}; BRAID_CPU_THREADS={threads}")
    print(f"linear {rows} x {k} x {n}, best of {args.reps}")
    base = results[("f32", "f32")]
    print(f"{'storage':8} {'accumulate':10} {'ms':>8} {'GFLOP/s':>8} {'time / f32 BLAS':>16}")
    for mode, label in (("f32", "f32 (BLAS)"), ("f64", "f64 (ref)")):
        for name, _ in TYPES:
            secs = results[(name, mode)]
            print(f"{name:8} {label:10} {secs * 1e3:8.1f} {2 * rows * k * n / secs / 1e9:8.1f} "
                  f"{secs / base:16.2f}")


if __name__ == "__main__":
    main()
