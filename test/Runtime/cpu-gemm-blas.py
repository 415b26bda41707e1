# The f32 GEMMs of the runtime's CPU kernel library as CMake builds it (with
# OpenBLAS when found), against float64 numpy, element by element:
#   |y - y64| <= gamma_k * (|x| |W|)[i, j] + u |y64| (+ u |b| with a bias)
# with u = 2^-24 and gamma_k = k u / (1 - k u): the classical bound of a
# sum of k products accumulated in f32 in any order (Higham, Accuracy and
# Stability of Numerical Algorithms, 3.1), plus the final rounding. It holds
# for whatever blocking and thread split BLAS uses. Under
# BRAID_CPU_ACCUMULATE=f64 (the reference kernel) products are exact and the
# sum nearly so: |y - y64| <= 2u |y64| + a few ulps of k 2^-53 sum|x||w|.
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
    F32 = 0
    mode = sys.argv[2]
    u = 2.0 ** -24
    rng = np.random.default_rng(17)
    ptr = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
    worst = 0.0

    def check(what, y, ref, absprod, k, bias=None):
        global worst
        if mode == "f64":
            bound = 2 * u * np.abs(ref) + 4 * k * 2.0 ** -53 * absprod + 1e-38
        else:
            gamma = k * u / (1 - k * u)
            bound = gamma * absprod + u * np.abs(ref) + 1e-38
            if bias is not None:
                bound = bound + u * np.abs(bias)
        ratio = float(np.max(np.abs(y - ref) / bound))
        worst = max(worst, ratio)
        if ratio > 1:
            sys.exit(f"FAIL {mode} {what}: error {ratio:.3g} x the bound")

    for rows, k, n in [(1, 1, 1), (3, 5, 7), (64, 768, 96), (33, 1031, 17), (256, 64, 300)]:
        for tw in (0, 1):
            for with_bias in (False, True):
                x = rng.standard_normal((rows, k)).astype(np.float32)
                w = rng.standard_normal((n, k) if tw else (k, n)).astype(np.float32)
                b = rng.standard_normal(n).astype(np.float32) if with_bias else None
                y = np.empty((rows, n), np.float32)
                lib.braid_k_linear(None, F32, ptr(x), ptr(w), ptr(b) if with_bias else None,
                                   ptr(y), rows, k, n, tw)
                w64 = w.astype(np.float64).T if tw else w.astype(np.float64)
                ref = x.astype(np.float64) @ w64
                if with_bias:
                    ref = ref + b
                check(f"linear {rows}x{k}x{n} tw={tw} bias={with_bias}", y, ref,
                      np.abs(x.astype(np.float64)) @ np.abs(w64), k, b)
    for batch, m, k, n in [(1, 4, 6, 5), (3, 64, 128, 32), (2, 17, 300, 9)]:
        for ta in (0, 1):
            for tb in (0, 1):
                a = rng.standard_normal((batch, k, m) if ta else (batch, m, k)).astype(np.float32)
                bm = rng.standard_normal((batch, n, k) if tb else (batch, k, n)).astype(np.float32)
                c = np.empty((batch, m, n), np.float32)
                lib.braid_k_batch_matmul(None, F32, ptr(a), ptr(bm), ptr(c), batch, m, k, n,
                                         ta, tb)
                a64 = np.swapaxes(a, 1, 2).astype(np.float64) if ta else a.astype(np.float64)
                b64 = np.swapaxes(bm, 1, 2).astype(np.float64) if tb else bm.astype(np.float64)
                check(f"batch_matmul {batch}x{m}x{k}x{n} ta={ta} tb={tb}", c, a64 @ b64,
                      np.abs(a64) @ np.abs(b64), k)
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
