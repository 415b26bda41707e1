# The f32 GEMMs of the runtime's CPU kernel library as CMake builds it (with
# OpenBLAS when found), against float64 numpy, element by element:
#   |y - y64| <= gamma_k * (|x| |W|)[i, j] + u |y64| (+ u |b| with a bias)
# with u = 2^-24 and gamma_k = k u / (1 - k u): the classical bound of a
# sum of k products accumulated in f32 in any order (Higham, Accuracy and
# Stability of Numerical Algorithms, 3.1), plus the final rounding. It holds
# for whatever blocking and thread split BLAS uses. Under
# BRAID_CPU_ACCUMULATE=f64 (the reference kernel) products are exact and the
# sum nearly so: |y - y64| <= 2u |y64| + a few ulps of k 2^-53 sum|x||w|.
# bf16 and f16 storage (exact inputs of that type) go through the same sgemm
# on f32 copies and round each output once to the storage type (unit
# roundoff uT = 2^-8, 2^-11): |y - y64| <= uT |y64| + (1 + uT) e32, e32 the
# f32 bound above; under f64 the reference rounds its f64 sum to f32, then to
# the type: (uT + 2u) |y64| + the f64 term. Shapes larger than the
# low-precision path's panels (512 rows, 1536 columns) cover its blocking; and
# all 65,536 values of each type come back exactly from y = [1] W.
# Also: BRAID_CPU_THREADS=2 gives the same bound; bad values of either
# variable fail with a message. A runtime built without BLAS
# (lib/braid_kernels_cpu.link empty) must refuse BRAID_CPU_ACCUMULATE=f32.
#
# RUN: %ctypes_python %s %braid_rt_lib/libbraid_kernels_cpu.so

import ctypes
import os
import subprocess
import sys

import numpy as np

lib_path = sys.argv[1]
if len(sys.argv) > 2:   # a child: one check under the environment it was given
    lib = ctypes.CDLL(lib_path)
    P, I = ctypes.c_void_p, ctypes.c_int64
    lib.braid_k_linear.argtypes = [P, ctypes.c_int, P, P, P, P, I, I, I, ctypes.c_int32]
    lib.braid_k_batch_matmul.argtypes = [P, ctypes.c_int, P, P, P, I, I, I, I, ctypes.c_int32,
                                         ctypes.c_int32]
    mode = sys.argv[2]
    u = 2.0 ** -24
    rng = np.random.default_rng(17)
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    worst = 0.0

    # Storage types: (code, unit roundoff, smallest positive value / 2, draw,
    # to the storage array, from it). bf16 draws are f32 values with the low
    # 16 bits cleared (exact in bf16), held as their upper 16 bits.
    def bf16_draw(shape):
        x = rng.standard_normal(shape).astype(np.float32)
        return (x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)

    def bf16_store(x):
        return (x.view(np.uint32) >> 16).astype(np.uint16)

    def bf16_load(bits):
        return (bits.astype(np.uint32) << 16).view(np.float32)

    TYPES = {
        "f32": (0, 0.0, 1e-38, lambda s: rng.standard_normal(s).astype(np.float32),
                lambda x: x, lambda y: y, np.float32),
        "bf16": (1, 2.0 ** -8, 1e-38, bf16_draw, bf16_store, bf16_load, np.uint16),
        "f16": (2, 2.0 ** -11, 2.0 ** -25,
                lambda s: rng.standard_normal(s).astype(np.float16).astype(np.float32),
                lambda x: x.astype(np.float16), lambda y: y.astype(np.float32), np.float16),
    }

    def check(what, y, ref, absprod, k, uT, floor, bias=None):
        global worst
        if mode == "f64":
            bound = (uT + 2 * u) * np.abs(ref) + 4 * k * 2.0 ** -53 * absprod + floor
        else:
            gamma = k * u / (1 - k * u)
            e32 = gamma * absprod + u * np.abs(ref)
            if bias is not None:
                e32 = e32 + u * np.abs(bias)
            bound = uT * np.abs(ref) + (1 + uT) * e32 + floor
        ratio = float(np.max(np.abs(y - ref) / bound))
        worst = max(worst, ratio)
        if ratio > 1:
            sys.exit(f"FAIL {mode} {what}: error {ratio:.3g} x the bound")

    # f32 also runs with BRAID_LINEAR_ROWS_APART (decode's rows: W streamed
    # 16 rows at a time, few_rows_linear.cpp): the last two shapes split over
    # threads (past 2^20 multiply-adds) and past one tile of accumulators
    # (16384 / rows columns).
    LINEAR = [(1, 1, 1), (3, 5, 7), (64, 768, 96), (33, 1031, 17), (256, 64, 300),
              (3, 67, 17000), (16, 70, 1100)]
    for tname, (code, uT, floor, draw, store, load, sdt) in TYPES.items():
        shapes = LINEAR if tname == "f32" else LINEAR + [(1100, 40, 1600)]
        for rows, k, n in shapes:
            for flags in (0, 1, 2, 3) if tname == "f32" else (0, 1):
                tw = flags & 1
                for with_bias in (False, True):
                    x = draw((rows, k))
                    w = draw((n, k) if tw else (k, n))
                    b = draw(n) if with_bias else None
                    xs, ws = store(x), store(w)
                    bs = store(b) if with_bias else None
                    ys = np.empty((rows, n), sdt)
                    lib.braid_k_linear(None, code, ptr(xs), ptr(ws), ptr(bs) if with_bias else None,
                                       ptr(ys), rows, k, n, flags)
                    y = load(ys).astype(np.float64)
                    w64 = w.astype(np.float64).T if tw else w.astype(np.float64)
                    ref = x.astype(np.float64) @ w64
                    if with_bias:
                        ref = ref + b
                    check(f"{tname} linear {rows}x{k}x{n} flags={flags} bias={with_bias}", y, ref,
                          np.abs(x.astype(np.float64)) @ np.abs(w64), k, uT, floor, b)
        BMM = [(1, 4, 6, 5), (3, 64, 128, 32), (2, 17, 300, 9)]
        for batch, m, k, n in BMM if tname == "f32" else BMM + [(2, 530, 24, 1540)]:
            for ta in (0, 1):
                for tb in (0, 1):
                    a = draw((batch, k, m) if ta else (batch, m, k))
                    bm = draw((batch, n, k) if tb else (batch, k, n))
                    cs = np.empty((batch, m, n), sdt)
                    lib.braid_k_batch_matmul(None, code, ptr(store(a)), ptr(store(bm)), ptr(cs),
                                             batch, m, k, n, ta, tb)
                    c = load(cs).astype(np.float64)
                    a64 = np.swapaxes(a, 1, 2).astype(np.float64) if ta else a.astype(np.float64)
                    b64 = np.swapaxes(bm, 1, 2).astype(np.float64) if tb else bm.astype(np.float64)
                    check(f"{tname} batch_matmul {batch}x{m}x{k}x{n} ta={ta} tb={tb}", c, a64 @ b64,
                          np.abs(a64) @ np.abs(b64), k, uT, floor)
    # Every bf16 and every f16 value through the conversion: y = [1] W with W
    # all 65,536 values of the type (past several panels of columns) must give
    # W back exactly, a NaN as a NaN (and -0 as a zero: a sum that starts
    # from +0, as sgemm's does, makes it +0).
    every = np.arange(65536, dtype=np.uint16)
    for tname, code, stored in (("bf16", 1, every), ("f16", 2, every.view(np.float16))):
        one = TYPES[tname][4](np.ones(1, np.float32))
        ys = np.empty(65536, stored.dtype)
        lib.braid_k_linear(None, code, ptr(one), ptr(stored), None, ptr(ys), 1, 1, 65536, 0)
        y, w = TYPES[tname][5](ys), TYPES[tname][5](stored)
        nan, zero = np.isnan(w), w == 0
        if not (np.array_equal(np.isnan(y), nan) and np.all(y[zero] == 0) and
                np.array_equal(y[~nan & ~zero].view(np.uint32),
                               w[~nan & ~zero].view(np.uint32))):
            sys.exit(f"FAIL {mode} {tname}: not every value converts exactly")
    print(f"{mode}: worst error {worst:.3g} of the bound")
    sys.exit(0)


def child(env_updates, mode):
    env = dict(os.environ)
    env.pop("BRAID_CPU_ACCUMULATE", None)
    env.pop("BRAID_CPU_THREADS", None)
    env.update(env_updates)
    return subprocess.run([sys.executable, __file__, lib_path, mode], env=env,
                          capture_output=True, text=True)


failures = []
link = os.path.join(os.path.dirname(lib_path), "braid_kernels_cpu.link")
blas = bool(open(link).read().split())
for env, mode in [({}, "f32"), ({"BRAID_CPU_ACCUMULATE": "f32"}, "f32"),
                  ({"BRAID_CPU_ACCUMULATE": "f32", "BRAID_CPU_THREADS": "2"}, "f32"),
                  ({"BRAID_CPU_ACCUMULATE": "f64"}, "f64")][:: 1 if blas else 3]:
    r = child(env, mode)
    if r.returncode:
        failures.append(f"{env}: {r.stdout}{r.stderr}")
refused = [] if blas else [({"BRAID_CPU_ACCUMULATE": "f32"},
                            "BRAID_CPU_ACCUMULATE=f32 needs a runtime built with BLAS")]
for env, message in refused + [({"BRAID_CPU_ACCUMULATE": "f16"},
                      "BRAID_CPU_ACCUMULATE must be f32 or f64, found 'f16'"),
                     ({"BRAID_CPU_THREADS": "0"},
                      "BRAID_CPU_THREADS must be a positive integer, found '0'")]:
    r = child(env, "f32")
    if r.returncode == 0 or message not in r.stderr:
        failures.append(f"{env}: expected a failure with {message!r}, got "
                        f"{r.returncode}: {r.stderr}")
if failures:
    sys.exit("FAIL\n" + "\n".join(failures))
print("PASS")
