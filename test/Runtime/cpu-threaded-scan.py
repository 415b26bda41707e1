# The selective scan's CPU kernels split over a rank's threads
# (runtime/src/cpu/mamba.cpp, grad_mamba.cpp):
#   selective_scan(_chunk)       the (batch, channel) pairs over the threads;
#   selective_scan(_chunk)_grad  the channels in blocks of 32 over the
#                                threads, each replayed once; dB / dC summed
#                                over the channels in channel order, dA / dD
#                                over the batch in batch order.
# Shapes past one block (70 and 40 channels: three and two blocks, the last
# one partial; 128 x 16 states of 32 channels are enough to thread the dB /
# dC sums too) and the chunk form's every input and output (h0, dh_end,
# ddecay, dh0, accumulate), with and without softplus. Checked:
#   - every output identical bit for bit with BRAID_CPU_THREADS=1, 2 and 3;
#   - the whole-sequence kernels against the float64 reference of
#     test/lib/braid_ref (ops.selective_scan, vjp.selective_scan_vjp) within
#     1e-5 of each output's largest magnitude (the per-op numpy checks at
#     small sizes are test/Kernels/cpu-grad-mamba-moe.py's);
#   - the chunk gradient with accumulate adds exactly the plain result to
#     what the outputs held.
#
# RUN: rm -rf %t.dir && mkdir -p %t.dir
# RUN: %ctypes_python %s %braid_rt_lib/libbraid_kernels_cpu.so %t.dir

import ctypes
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

F32 = 0
P, I, I4 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32


class ScanParams(ctypes.Structure):
    """braid_scan_params (runtime.h)."""
    _fields_ = [("batch", I), ("seq", I), ("channels", I), ("state", I),
                ("delta_softplus", I4)]


def scan_params(*fields):
    """The scan kernels' params argument, by reference."""
    return ctypes.byref(ScanParams(*fields))


SP = ctypes.POINTER(ScanParams)
SIGS = {
    "braid_k_selective_scan": [P, I4, P, P, P, P, P, P, P, SP],
    "braid_k_selective_scan_grad": [P, I4] + [P] * 13 + [SP],
    "braid_k_selective_scan_chunk": [P, I4] + [P] * 10 + [SP],
    "braid_k_selective_scan_chunk_grad": [P, I4] + [P] * 17 + [SP, I4],
}
# (batch, seq, channels, state)
SHAPES = [(2, 40, 70, 8), (1, 128, 40, 16), (3, 17, 5, 4)]


def inputs(shape, softplus):
    B, S, Di, N = shape
    rng = np.random.default_rng(B * 1000 + S + Di + N)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    x, Bm, Cm, dy = f(B, S, Di), f(B, S, N), f(B, S, N), f(B, S, Di)
    # softplus(delta) or delta itself: step sizes around 0.01-1.
    delta = (f(B, S, Di) - 2.0 if softplus else np.abs(f(B, S, Di)) * 0.3).astype(np.float32)
    A = -np.exp(f(Di, N) * 0.5).astype(np.float32)
    D = f(Di)
    h0, dh_end, ddecay = f(B, Di, N), f(B, Di, N), f(B, Di, N)
    return dict(x=x, delta=delta, A=A, Bm=Bm, Cm=Cm, D=D, dy=dy, h0=h0, dh_end=dh_end,
                ddecay=ddecay)


def child(lib_path, out_path):
    lib = ctypes.CDLL(lib_path)
    for name, sig in SIGS.items():
        getattr(lib, name).argtypes = sig
    ptr = lambda a: a.ctypes.data  # noqa: E731
    results = {}
    for shape in SHAPES:
        B, S, Di, N = shape
        for sp in (0, 1):
            v = inputs(shape, sp)
            tag = f"{B}x{S}x{Di}x{N} sp={sp}"
            common = [ptr(v[k]) for k in ("x", "delta", "A", "Bm", "Cm", "D")]
            y = np.zeros((B, S, Di), np.float32)
            lib.braid_k_selective_scan(None, F32, *common, ptr(y), scan_params(B, S, Di, N, sp))
            results[f"{tag} y"] = y
            g = {k: np.zeros(s, np.float32) for k, s in
                 (("dx", (B, S, Di)), ("ddelta", (B, S, Di)), ("dA", (Di, N)),
                  ("dB", (B, S, N)), ("dC", (B, S, N)), ("dD", (Di,)))}
            lib.braid_k_selective_scan_grad(None, F32, *common, ptr(v["dy"]),
                                            *(ptr(g[k]) for k in g), scan_params(B, S, Di, N, sp))
            for k, a in g.items():
                results[f"{tag} {k}"] = a
            # The chunk form from h0, with its three outputs.
            y, h_end, decay = (np.zeros(s, np.float32) for s in
                               ((B, S, Di), (B, Di, N), (B, Di, N)))
            lib.braid_k_selective_scan_chunk(None, F32, *common, ptr(v["h0"]), ptr(y),
                                             ptr(h_end), ptr(decay), scan_params(B, S, Di, N, sp))
            results[f"{tag} chunk y"], results[f"{tag} chunk h_end"] = y, h_end
            results[f"{tag} chunk decay"] = decay
            for acc in (0, 1):
                cg = {k: np.zeros(a.shape, np.float32) for k, a in g.items()}
                cg["dh0"] = np.zeros((B, Di, N), np.float32)
                if acc:  # outputs that already hold something
                    for k, a in cg.items():
                        a[...] = np.arange(a.size, dtype=np.float32).reshape(a.shape) % 7 - 3
                    held = {k: a.copy() for k, a in cg.items()}
                lib.braid_k_selective_scan_chunk_grad(
                    None, F32, *common, ptr(v["h0"]), ptr(v["dy"]), ptr(v["dh_end"]),
                    ptr(v["ddecay"]), *(ptr(cg[k]) for k in cg), scan_params(B, S, Di, N, sp), acc)
                for k, a in cg.items():
                    results[f"{tag} chunk acc={acc} {k}"] = a
                    if acc:
                        results[f"{tag} chunk held {k}"] = held[k]
    np.savez(out_path, **results)


def run(lib_path, work, threads):
    env = dict(os.environ, BRAID_CPU_THREADS=str(threads))
    env.pop("BRAID_CPU_ACCUMULATE", None)
    out = os.path.join(work, f"t{threads}.npz")
    subprocess.run([sys.executable, __file__, "--child", lib_path, out], env=env, check=True)
    return dict(np.load(out))


def references(failures, got):
    from braid_ref import ops, vjp
    for shape in SHAPES:
        B, S, Di, N = shape
        for sp in (0, 1):
            v = {k: a.astype(np.float64) for k, a in inputs(shape, sp).items()}
            tag = f"{B}x{S}x{Di}x{N} sp={sp}"
            args = (v["x"], v["delta"], v["A"], v["Bm"], v["Cm"], v["D"])
            refs = {"y": ops.selective_scan(*args, delta_softplus=bool(sp))}
            grads = vjp.selective_scan_vjp(v["dy"], *args, delta_softplus=bool(sp))
            refs.update(zip(("dx", "ddelta", "dA", "dB", "dC", "dD"), grads))
            for what, ref in refs.items():
                scale = float(np.max(np.abs(ref)))
                err = float(np.max(np.abs(got[f"{tag} {what}"] - ref)))
                if err > 1e-5 * scale:
                    failures.append(f"{tag} {what}: error {err:.3g} against the largest "
                                    f"{scale:.3g}")
            for k in ("dx", "ddelta", "dA", "dB", "dC", "dD", "dh0"):
                plain = got[f"{tag} chunk acc=0 {k}"]
                added = got[f"{tag} chunk acc=1 {k}"] - got[f"{tag} chunk held {k}"]
                if np.max(np.abs(added - plain)) > 1e-6 * max(1.0, float(np.max(np.abs(plain)))):
                    failures.append(f"{tag} chunk {k}: accumulate does not add the result")


def main():
    lib_path, work = sys.argv[1], sys.argv[2]
    failures = []
    runs = {t: run(lib_path, work, t) for t in (1, 2, 3)}
    references(failures, runs[1])
    for label in runs[1]:
        for t in (2, 3):
            if not np.array_equal(runs[1][label], runs[t][label]):
                failures.append(f"{label}: 1 and {t} threads differ")
    if failures:
        sys.exit("FAIL\n" + "\n".join(failures))
    print(f"{len(runs[1])} outputs checked at 1, 2 and 3 threads")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
