# The CPU kernels that split their work over a rank's threads at sizes past
# their thresholds (the existing kernel tests' shapes stay below them):
#   batch_matmul      (the reference GEMM: f64 mode) items over the
#                     threads, each item one GEMM on one thread; f32 and
#                     bf16 with BLAS run each item as one sgemm on the
#                     library's threads (bf16 converted to f32 panels,
#                     matmul.cpp lowPrecisionGemm), checked for accuracy
#                     only: the library's sum order may change with its
#                     thread count (OpenBLAS on a Sapphire Rapids Xeon does
#                     for these shapes, in bf16 and f32 alike);
#   linear in f32 with BRAID_LINEAR_ROWS_APART (a decode step's rows:
#                     few_rows_linear.cpp): output columns over the threads,
#                     W read once per 16 rows;
#   rms_norm, layer_norm and their gradients: rows over the threads, then
#                     (gradients) dgamma / dbeta's columns over the threads.
# Checked:
#   - outputs identical bit for bit with BRAID_CPU_THREADS=1, 2 and 3:
#     batch_matmul in f64 mode, the few-rows linear in f32, the norms in f32
#     and bf16;
#   - f32 batch_matmul and the few-rows linear against float64 numpy within gamma_k |A||B| + u |C|
#     (cpu-gemm-blas.py's bound), bf16 batch_matmul against float64 numpy on
#     the bf16 inputs within gamma_k |A||B| + u_bf16 |C| (the f32 sum, then
#     one rounding to bf16), at every thread count; the norms and their
#     gradients against float64 numpy within 1e-5 of each output's largest
#     magnitude.
#
# RUN: rm -rf %t.dir && mkdir -p %t.dir
# RUN: %ctypes_python %s %braid_rt_lib/libbraid_kernels_cpu.so %t.dir

import ctypes
import os
import subprocess
import sys

import numpy as np

F32, BF16 = 0, 1
P, I, I4, D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_double
SIGS = {
    "braid_k_linear": [P, I4, P, P, P, P, I, I, I, I4],
    "braid_k_batch_matmul": [P, I4, P, P, P, I, I, I, I, I4, I4],
    "braid_k_rms_norm": [P, I4, P, P, P, I, I, D],
    "braid_k_layer_norm": [P, I4, P, P, P, P, I, I, D],
    "braid_k_rms_norm_grad": [P, I4, P, P, P, P, P, I, I, D],
    "braid_k_layer_norm_grad": [P, I4, P, P, P, P, P, P, I, I, D],
}
# (batch, m, k, n): batches that split evenly over 2 threads and not.
GEMMS = [(4, 96, 128, 100), (6, 64, 200, 96), (5, 80, 160, 90), (3, 128, 96, 120)]
# (rows, k, n) of a linear with a bias: one row, 16 rows past one tile of
# accumulators (16384 / rows columns), n not a multiple of 16, and 37 rows
# (three passes over W).
LINEARS = [(1, 300, 9000), (16, 200, 1100), (5, 129, 3001), (37, 64, 700)]
NORMS = [(300, 768), (97, 1031), (4100, 40)]
EPS = 1e-5


def inputs():
    rng = np.random.default_rng(5)
    cases = {}
    for batch, m, k, n in GEMMS:
        for ta in (0, 1):
            for tb in (0, 1):
                a = rng.standard_normal((batch, k, m) if ta else (batch, m, k)).astype(np.float32)
                b = rng.standard_normal((batch, n, k) if tb else (batch, k, n)).astype(np.float32)
                cases[f"bmm {batch}x{m}x{k}x{n} ta={ta} tb={tb}"] = (a, b)
    for rows, k, n in LINEARS:
        for tw in (0, 1):
            x = rng.standard_normal((rows, k)).astype(np.float32)
            w = rng.standard_normal((n, k) if tw else (k, n)).astype(np.float32)
            cases[f"lin {rows}x{k}x{n} tw={tw}"] = (x, w, rng.standard_normal(n).astype(np.float32))
    for rows, hidden in NORMS:
        x = (rng.standard_normal((rows, hidden)) * 2 + 0.5).astype(np.float32)
        g, b = (rng.standard_normal(hidden).astype(np.float32) for _ in range(2))
        dy = rng.standard_normal((rows, hidden)).astype(np.float32)
        cases[f"norm {rows}x{hidden}"] = (x, g, b, dy)
    return cases


def to_bf16(a):
    """float32 -> bf16 bits (round to nearest even) as uint16."""
    u = a.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def child(lib_path, out_path):
    lib = ctypes.CDLL(lib_path)
    for name, sig in SIGS.items():
        getattr(lib, name).argtypes = sig
    ptr = lambda a: a.ctypes.data  # noqa: E731
    results = {}
    for label, arrays in inputs().items():
        if label.startswith("bmm"):
            a, b = arrays
            batch, m, k, n = (int(x) for x in label.split()[1].split("x"))
            ta, tb = int(label[-6]), int(label[-1])
            for dt, conv in ((F32, lambda v: v), (BF16, to_bf16)):
                c = np.zeros((batch, m, n), np.float32 if dt == F32 else np.uint16)
                a_s, b_s = conv(a), conv(b)
                lib.braid_k_batch_matmul(None, dt, ptr(a_s), ptr(b_s), ptr(c), batch, m, k, n,
                                         ta, tb)
                results[f"{label} dt={dt}"] = c
            continue
        if label.startswith("lin"):
            x, w, b = arrays
            rows, k, n = (int(v) for v in label.split()[1].split("x"))
            y = np.zeros((rows, n), np.float32)
            # BRAID_LINEAR_ROWS_APART (2) with the transpose flag (1).
            lib.braid_k_linear(None, F32, ptr(x), ptr(w), ptr(b), ptr(y), rows, k, n,
                               2 | int(label[-1]))
            results[label] = y
            continue
        x, g, b, dy = arrays
        rows, hidden = x.shape
        for dt, conv in ((F32, lambda v: v), (BF16, to_bf16)):
            xs, gs, bs, dys = (conv(v) for v in (x, g, b, dy))
            e = lambda *s: np.zeros(s, xs.dtype)  # noqa: E731
            y = e(rows, hidden)
            lib.braid_k_rms_norm(None, dt, ptr(xs), ptr(gs), ptr(y), rows, hidden, EPS)
            results[f"{label} dt={dt} rms"] = y
            y = e(rows, hidden)
            lib.braid_k_layer_norm(None, dt, ptr(xs), ptr(gs), ptr(bs), ptr(y), rows, hidden,
                                   EPS)
            results[f"{label} dt={dt} ln"] = y
            dx, dg = e(rows, hidden), e(hidden)
            lib.braid_k_rms_norm_grad(None, dt, ptr(xs), ptr(gs), ptr(dys), ptr(dx), ptr(dg),
                                      rows, hidden, EPS)
            results[f"{label} dt={dt} rms dx"], results[f"{label} dt={dt} rms dg"] = dx, dg
            dx, dg, db = e(rows, hidden), e(hidden), e(hidden)
            lib.braid_k_layer_norm_grad(None, dt, ptr(xs), ptr(gs), ptr(dys), ptr(dx), ptr(dg),
                                        ptr(db), rows, hidden, EPS)
            results[f"{label} dt={dt} ln dx"], results[f"{label} dt={dt} ln dg"] = dx, dg
            results[f"{label} dt={dt} ln db"] = db
    np.savez(out_path, **results)


def run(lib_path, work, env_updates, tag):
    env = dict(os.environ)
    env.pop("BRAID_CPU_ACCUMULATE", None)
    env.update(env_updates)
    out = os.path.join(work, tag + ".npz")
    subprocess.run([sys.executable, __file__, "--child", lib_path, out], env=env, check=True)
    return dict(np.load(out))


def from_bf16(bits):
    """bf16 bits (uint16) -> float32."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def references(failures, got):
    """Checks the outputs of one run against float64 numpy: every f32 output,
    and bf16 batch_matmul, which runs through the same sgemm."""
    u = 2.0 ** -24
    for label, arrays in inputs().items():
        if label.startswith("bmm"):
            ta, tb = int(label[-6]), int(label[-1])
            for dt, unit in ((F32, u), (BF16, 2.0 ** -8)):
                a, b = arrays if dt == F32 else (from_bf16(to_bf16(v)) for v in arrays)
                a, b = a.astype(np.float64), b.astype(np.float64)
                a, b = (np.swapaxes(a, 1, 2) if ta else a), (np.swapaxes(b, 1, 2) if tb else b)
                k = a.shape[2]
                ref, absprod = a @ b, np.abs(a) @ np.abs(b)
                # bf16: |c - ref| <= |c - s| + |s - ref| for the f32 sum s,
                # which is within gamma_k |A||B| of ref and rounds to c within
                # unit |s|.
                gamma = k * u / (1 - k * u) * (1 + unit if dt == BF16 else 1)
                bound = gamma * absprod + unit * np.abs(ref) + 1e-38
                c = got[f"{label} dt={dt}"]
                c = c if dt == F32 else from_bf16(c)
                ratio = float(np.max(np.abs(c - ref) / bound))
                if ratio > 1:
                    failures.append(f"{label} dt={dt}: error {ratio:.3g} x the bound")
            continue
        if label.startswith("lin"):
            x, w, b = (v.astype(np.float64) for v in arrays)
            w = w.T if label.endswith("tw=1") else w
            k = x.shape[1]
            ref, absprod = x @ w + b, np.abs(x) @ np.abs(w)
            bound = k * u / (1 - k * u) * absprod + u * (np.abs(ref) + np.abs(b)) + 1e-38
            ratio = float(np.max(np.abs(got[label] - ref) / bound))
            if ratio > 1:
                failures.append(f"{label}: error {ratio:.3g} x the bound")
            continue
        x, g, b, dy = (v.astype(np.float64) for v in arrays)
        h = x.shape[1]
        r = 1 / np.sqrt((x * x).mean(1, keepdims=True) + EPS)
        mean = x.mean(1, keepdims=True)
        ri = 1 / np.sqrt(((x - mean) ** 2).mean(1, keepdims=True) + EPS)
        xh = (x - mean) * ri
        gdy = g * dy
        refs = {
            "rms": x * r * g,
            "ln": xh * g + b,
            "rms dx": r * gdy - x * r ** 3 * (gdy * x).mean(1, keepdims=True),
            "rms dg": (dy * x * r).sum(0),
            "ln dx": ri * (gdy - gdy.mean(1, keepdims=True)
                           - xh * (gdy * xh).sum(1, keepdims=True) / h),
            "ln dg": (dy * xh).sum(0),
            "ln db": dy.sum(0),
        }
        for what, ref in refs.items():
            err = float(np.max(np.abs(got[f"{label} dt={F32} {what}"] - ref)))
            if err > 1e-5 * float(np.max(np.abs(ref))):
                failures.append(f"{label} {what}: error {err:.3g} against the largest "
                                f"{float(np.max(np.abs(ref))):.3g}")


def main():
    lib_path, work = sys.argv[1], sys.argv[2]
    failures = []
    runs = {t: run(lib_path, work, {"BRAID_CPU_THREADS": str(t)}, f"f32-t{t}") for t in (1, 2, 3)}
    f64 = {t: run(lib_path, work, {"BRAID_CPU_THREADS": str(t), "BRAID_CPU_ACCUMULATE": "f64"},
                  f"f64-t{t}") for t in (1, 2, 3)}
    for t in (1, 2, 3):
        references(failures, runs[t])
    for label in runs[1]:
        blas = label.startswith("bmm")  # sgemm's threads: accuracy only
        for t1, t2 in [] if blas else [(1, 2), (1, 3)]:
            if not np.array_equal(runs[t1][label], runs[t2][label]):
                failures.append(f"{label}: {t1} and {t2} threads differ")
        for t in (2, 3):
            if not np.array_equal(f64[1][label], f64[t][label]):
                failures.append(f"{label}, f64 mode: 1 and {t} threads differ")
    if failures:
        sys.exit("FAIL\n" + "\n".join(failures))
    print(f"{len(runs[1])} outputs checked")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
