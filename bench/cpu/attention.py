"""The CPU attention kernels alone: braid_k_attention and braid_k_attention_grad
of the CMake-built kernel library at one shape (default: bench.py's Llama,
S = 1024, 16 query / 4 kv heads, D = 64, causal, RoPE), f32 storage (or
--dtype bf16 / f16: the blocked kernels then run on f32 copies), timed in the
default mode (blocked GEMMs through BLAS, attention_gemm.cpp) and under
BRAID_CPU_ACCUMULATE=f64 (the reference kernels) in one run.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
      python3 bench/cpu/attention.py --build build [--threads 2] [--repeat 3] [--dtype bf16]

FLOPs: 4 B H S Skv D / 2 forward (QK^T and PV over the causal half), 2.5x
that backward (S, dP, dQ, dK, dV): the work of the blocked form, counted the
same for both kernels. Prints the best of --repeat calls.
"""

import argparse
import ctypes
import os
import pathlib
import subprocess
import sys
import time


DTYPES = {"f32": 0, "bf16": 1, "f16": 2}


def child(lib_path, b, s, hq, hkv, d, repeat, dtype):
    import numpy as np

    lib = ctypes.CDLL(lib_path)
    P, I, I4, D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_double

    class Params(ctypes.Structure):  # braid_attention_params (runtime.h)
        _fields_ = [("batch", I), ("seq", I), ("seq_kv", I), ("heads", I), ("kv_heads", I),
                    ("head_dim", I), ("v_head_dim", I), ("causal", I4), ("scale", D),
                    ("rope_theta", D), ("q_offset", I)]

    AP = ctypes.POINTER(Params)
    lib.braid_k_attention.argtypes = [P, I4, P, P, P, P, AP]
    lib.braid_k_attention_grad.argtypes = [P, I4, P, P, P, P, P, P, P, AP]
    p = ctypes.byref(Params(b, s, s, hq, hkv, d, d, 1, d ** -0.5, 10000.0, 0))
    rng = np.random.default_rng(0)
    q, do = (rng.standard_normal((b, s, hq, d)).astype(np.float32) for _ in range(2))
    k, v = (rng.standard_normal((b, s, hkv, d)).astype(np.float32) for _ in range(2))
    if dtype == "bf16":  # the upper 16 bits
        q, do, k, v = ((x.view(np.uint32) >> 16).astype(np.uint16) for x in (q, do, k, v))
    elif dtype == "f16":
        q, do, k, v = (x.astype(np.float16) for x in (q, do, k, v))
    code = DTYPES[dtype]
    o, dq, dk, dv = (np.zeros_like(x) for x in (q, q, k, v))
    a = lambda x: x.ctypes.data  # noqa: E731
    fwd = bwd = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        lib.braid_k_attention(None, code, a(q), a(k), a(v), a(o), p)
        fwd = min(fwd, time.perf_counter() - t)
        t = time.perf_counter()
        lib.braid_k_attention_grad(None, code, a(q), a(k), a(v), a(o), a(dq), a(dk), a(dv), p)
        bwd = min(bwd, time.perf_counter() - t)
    print(fwd, bwd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--shape", default="1,1024,16,4,64", help="batch,seq,heads,kv_heads,head_dim")
    ap.add_argument("--dtype", default="f32", choices=sorted(DTYPES), help="storage type")
    args = ap.parse_args()
    lib = str(pathlib.Path(args.build) / "lib" / "libbraid_kernels_cpu.so")
    b, s, hq, hkv, d = (int(x) for x in args.shape.split(","))
    flops = 4.0 * b * hq * s * s * d / 2
    print(f"attention B={b} S={s} heads={hq}/{hkv} D={d} causal RoPE, {args.dtype}, "
          f"{args.threads} threads; forward {flops / 1e9:.2f} GFLOP, backward "
          f"{2.5 * flops / 1e9:.2f}")
    times = {}
    for mode in ("f32", "f64"):
        env = dict(os.environ, BRAID_CPU_ACCUMULATE=mode, BRAID_CPU_THREADS=str(args.threads))
        r = subprocess.run([sys.executable, __file__, "--child", lib, *args.shape.split(","),
                            str(args.repeat), args.dtype], env=env, capture_output=True, text=True,
                           check=True)
        fwd, bwd = (float(x) for x in r.stdout.split())
        times[mode] = (fwd, bwd)
        what = "blocked GEMMs" if mode == "f32" else "reference (f64 mode)"
        print(f"{what:<22} forward {fwd * 1e3:8.1f} ms {flops / fwd / 1e9:6.1f} GFLOP/s   "
              f"backward {bwd * 1e3:8.1f} ms {2.5 * flops / bwd / 1e9:6.1f} GFLOP/s")
    print(f"speedup: forward {times['f64'][0] / times['f32'][0]:.1f}x, "
          f"backward {times['f64'][1] / times['f32'][1]:.1f}x")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], *(int(x) for x in sys.argv[3:8]), int(sys.argv[8]), sys.argv[9])
    else:
        main()
