"""The selective scan's CPU kernels alone, one kernel library against another.

Times braid_k_selective_scan and braid_k_selective_scan_grad at the Mamba
bench model's shape (batch 1, seq 1024, 2048 channels, state 16, softplus)
in each library given, alternating, and prints how far each library's
outputs are from the first's. Build a library of any commit with:

    git archive REV runtime | tar -x -C DIR && (cd DIR && clang++-22 -std=c++17 -O3 \
      -DNDEBUG -fPIC -shared -Iruntime/include runtime/src/cpu/*.cpp -o lib.so -lopenblas)

usage: BRAID_CPU_THREADS=2 python3 bench/cpu/scan.py NAME=LIB.so [NAME=LIB.so ...] [--reps 3]
"""
import argparse
import ctypes
import time

import numpy as np

P, I, I4 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32


class ScanParams(ctypes.Structure):
    """braid_scan_params (runtime.h)."""
    _fields_ = [("batch", I), ("seq", I), ("channels", I), ("state", I),
                ("delta_softplus", I4)]


def scan_params(*fields):
    """The scan kernels' params argument, by reference."""
    return ctypes.byref(ScanParams(*fields))


B, S, DI, N = 1, 1024, 2048, 16


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("libs", nargs="+", help="NAME=path of a kernel library")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    x, delta, Bm, Cm, dy = f(B, S, DI), f(B, S, DI) - 2, f(B, S, N), f(B, S, N), f(B, S, DI)
    A, D = -np.exp(f(DI, N) * 0.5).astype(np.float32), f(DI)
    ptr = lambda a: a.ctypes.data  # noqa: E731
    libs = {}
    for spec in args.libs:
        name, path = spec.split("=", 1)
        lib = ctypes.CDLL(path)
        lib.braid_k_selective_scan.argtypes = [P, I4] + [P] * 7 + [ctypes.POINTER(ScanParams)]
        lib.braid_k_selective_scan_grad.argtypes = [P, I4] + [P] * 13 + [
            ctypes.POINTER(ScanParams)]
        libs[name] = lib
    times, outputs = {n: [] for n in libs}, {}
    for _ in range(args.reps):
        for name, lib in libs.items():
            y = np.zeros((B, S, DI), np.float32)
            t0 = time.perf_counter()
            lib.braid_k_selective_scan(None, 0, *map(ptr, (x, delta, A, Bm, Cm, D, y)),
                                       scan_params(B, S, DI, N, 1))
            t1 = time.perf_counter()
            grads = [np.zeros(s, np.float32) for s in
                     ((B, S, DI), (B, S, DI), (DI, N), (B, S, N), (B, S, N), (DI,))]
            lib.braid_k_selective_scan_grad(None, 0, *map(ptr, (x, delta, A, Bm, Cm, D, dy)),
                                            *map(ptr, grads), scan_params(B, S, DI, N, 1))
            t2 = time.perf_counter()
            times[name].append((t1 - t0, t2 - t1))
            outputs[name] = [y] + grads
    first = next(iter(libs))
    print(f"selective_scan B={B} S={S} Di={DI} N={N}, f32; medians of {args.reps}")
    for name, runs in times.items():
        fwd, bwd = (float(np.median([r[k] for r in runs])) * 1e3 for k in (0, 1))
        far = max(float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))
                  for a, b in zip(outputs[name], outputs[first]))
        print(f"{name:>12}: forward {fwd:7.1f} ms  backward {bwd:7.1f} ms  "
              f"outputs vs {first}: {far:.2g} relative")


if __name__ == "__main__":
    main()
