# bf16 and f16 attention on the CPU runs the f32 blocked kernels on f32 copies
# of its operands (runtime/src/cpu/staged_f32.h): the values of a bf16 or f16
# tensor are exact in f32, so each output must equal, bit for bit, the f32
# kernel's output on the same values rounded once (to nearest even) to the
# storage type; the block kernels' f32 outputs (out, lse) and accumulators
# (dq, dk, dv) must equal the f32 call's exactly. Every entry point:
# attention and attention_grad (with query offsets), attention_block[_grad] (zigzag
# positions), causal and not, GQA, RoPE, Dv != D; with 1 and 2 threads.
# Results are the same with 1 and 2 threads. The check can fail: under
# BRAID_CPU_ACCUMULATE=f64 the reference kernels run (their sums in another
# order), and their bf16 / f16 outputs differ from the rounded f32 blocked
# kernel's.
#
# RUN: %ctypes_python %s %braid_rt_lib/libbraid_kernels_cpu.so %t

import ctypes
import os
import subprocess
import sys

import numpy as np

P, I, I4, D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_double


class Params(ctypes.Structure):
    """braid_attention_params (runtime.h)."""
    _fields_ = [("batch", I), ("seq", I), ("seq_kv", I), ("heads", I), ("kv_heads", I),
                ("head_dim", I), ("v_head_dim", I), ("causal", I4), ("scale", D),
                ("rope_theta", D), ("q_offset", I)]


def params(*fields):
    """The attention kernels' last argument, by reference."""
    return ctypes.byref(Params(*fields))


AP = ctypes.POINTER(Params)
SIGS = {
    "braid_k_attention": [P, I4, P, P, P, P, AP],
    "braid_k_attention_grad": [P, I4, P, P, P, P, P, P, P, AP],
    "braid_k_attention_block": [P, I4, P, P, P, P, P, P, P, AP],
    "braid_k_attention_block_grad": [P, I4, P, P, P, P, P, P, P, P, P, P, P, AP],
}
F32, BF16, F16 = 0, 1, 2

# (name, batch, seq, seq_kv, heads, kv_heads, d, dv, causal, theta, q_offset)
FULL = [
    ("causal gqa rope", 2, 100, 100, 4, 2, 16, 16, 1, 10000.0, 0),
    ("causal mqa dv!=d", 1, 150, 150, 4, 1, 32, 24, 1, 0.0, 0),
    ("bidirectional", 1, 70, 90, 2, 2, 8, 8, 0, 500.0, 0),
    ("offset causal", 1, 70, 150, 4, 2, 16, 16, 1, 10000.0, 60),
]


def to_bf16_bits(x):
    """f32 -> bf16 bits, round to nearest even (no NaNs here)."""
    u = x.astype(np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


STORAGE = {  # code: (to storage, to f32)
    BF16: (to_bf16_bits, from_bf16_bits),
    F16: (lambda x: x.astype(np.float16), lambda y: y.astype(np.float32)),
}


def zigzag(seq, n):
    c = seq // (2 * n)
    order = [x for j in range(n) for x in (j, 2 * n - 1 - j)]
    return np.concatenate([np.arange(ch * c, (ch + 1) * c) for ch in order]).astype(np.int64)


def run(lib_path):
    """Every case in both storage types: {key: (the low-precision call's
    output, what it must equal)}."""
    lib = ctypes.CDLL(lib_path)
    for name, args in SIGS.items():
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = None
    a = lambda x: x.ctypes.data  # noqa: E731
    res = {}

    def same(what, got, want):
        res[what + " got"], res[what + " want"] = got, want

    for code, (store, load) in STORAGE.items():
        tname = "bf16" if code == BF16 else "f16"
        for i, (name, b, s, skv, hq, hkv, d, dv, causal, theta, off) in enumerate(FULL):
            rng = np.random.default_rng(i)
            f = lambda *sh: load(store(rng.standard_normal(sh).astype(np.float32)))  # noqa
            q, k, v, do = f(b, s, hq, d), f(b, skv, hkv, d), f(b, skv, hkv, dv), f(b, s, hq, dv)
            scale = 1.0 / np.sqrt(d)
            def offset_calls(c, q, k, v, do):
                """attention at the query offset and its gradient in storage type c."""
                o = np.empty((b, s, hq, dv), q.dtype)
                g = [np.empty(x.shape, q.dtype) for x in (q, k, v)]
                p = params(b, s, skv, hq, hkv, d, dv, causal, scale, theta, off)
                lib.braid_k_attention(None, c, a(q), a(k), a(v), a(o), p)
                lib.braid_k_attention_grad(None, c, a(q), a(k), a(v), a(do), a(g[0]), a(g[1]),
                                           a(g[2]), p)
                return o, g

            # The f32 kernel on the storage type's values, then the type's own call.
            o32, g32 = offset_calls(F32, q, k, v, do)
            qs, ks, vs, dos = (store(x) for x in (q, k, v, do))
            o, g = offset_calls(code, qs, ks, vs, dos)
            same(f"{tname} {name} out", o, store(o32))
            for gname, x, y in zip(("dq", "dk", "dv"), g, g32):
                same(f"{tname} {name} {gname}", x, store(y))
        # Context parallelism's blocks: f32 outputs and accumulators.
        z = zigzag(260, 2)
        for j, (qp, kp, causal) in enumerate([(z[:130], z[:130], 1), (z[:130], z[130:], 1),
                                              (z[130:], z[:130], 0)]):
            b, hq, hkv, d, dv, theta = 1, 4, 2, 16, 8, 10000.0
            s, skv = len(qp), len(kp)
            rng = np.random.default_rng(100 + j)
            f = lambda *sh: load(store(rng.standard_normal(sh).astype(np.float32)))  # noqa
            q, k, v, do = f(b, s, hq, d), f(b, skv, hkv, d), f(b, skv, hkv, dv), f(b, s, hq, dv)
            scale = 1.0 / np.sqrt(d)
            lse_in = rng.standard_normal((b, s, hq)).astype(np.float32) + 3
            delta = rng.standard_normal((b, s, hq)).astype(np.float32)
            outs = {}
            for c, args in ((F32, (q, k, v, do)), (code, tuple(store(x) for x in (q, k, v, do)))):
                o = np.empty((b, s, hq, dv), np.float32)
                lse = np.empty((b, s, hq), np.float32)
                p = params(b, s, skv, hq, hkv, d, dv, causal, scale, theta, 0)
                lib.braid_k_attention_block(None, c, a(args[0]), a(args[1]), a(args[2]), a(qp),
                                            a(kp), a(o), a(lse), p)
                acc = [np.full(x.shape, 0.25, np.float32) for x in (q, k, v)]
                lib.braid_k_attention_block_grad(None, c, a(args[0]), a(args[1]), a(args[2]),
                                                 a(args[3]), a(qp), a(kp), a(lse_in), a(delta),
                                                 a(acc[0]), a(acc[1]), a(acc[2]), p)
                outs[c] = [o, lse] + acc
            for oname, x, y in zip(("out", "lse", "dq", "dk", "dv"), outs[code], outs[F32]):
                same(f"{tname} block {j} {oname}", x, y)
    return res


def child(env_updates, out):
    env = dict(os.environ)
    for key in ("BRAID_CPU_ACCUMULATE", "BRAID_CPU_THREADS"):
        env.pop(key, None)
    env.update(env_updates)
    r = subprocess.run([sys.executable, __file__, sys.argv[1], sys.argv[2], out], env=env,
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"FAIL: {env_updates}: {r.stdout}{r.stderr}")
    return dict(np.load(out))


def mismatches(res):
    return [f"{k[:-4]}: {int(np.sum(v != res[k[:-4] + ' want']))} of {v.size} differ"
            for k, v in res.items() if k.endswith(" got")
            and not np.array_equal(v, res[k[:-4] + " want"])]


if len(sys.argv) > 3:  # a child: run every case, save what to compare
    np.savez(sys.argv[3], **run(sys.argv[1]))
    sys.exit(0)

link = os.path.join(os.path.dirname(sys.argv[1]), "braid_kernels_cpu.link")
if not open(link).read().split():
    print("skipped: the runtime has no BLAS (no staged path)")
    sys.exit(0)
one = child({"BRAID_CPU_THREADS": "1"}, sys.argv[2] + ".threads1.npz")
two = child({"BRAID_CPU_THREADS": "2"}, sys.argv[2] + ".threads2.npz")
ref = child({"BRAID_CPU_ACCUMULATE": "f64"}, sys.argv[2] + ".reference.npz")
failures = mismatches(one) + mismatches(two)
failures += [f"{k}: differs between 1 and 2 threads" for k in one
             if not np.array_equal(one[k], two[k])]
# The reference kernels' low-precision outputs against the blocked kernel's.
if not mismatches({k: (ref[k] if k.endswith(" got") else one[k]) for k in one}):
    failures.append("the reference kernels' outputs equal the rounded blocked kernel's bit for "
                    "bit: the check cannot tell the two paths apart")
if failures:
    sys.exit("FAIL\n" + "\n".join(failures))
print(f"PASS: {sum(k.endswith(' got') for k in one)} outputs equal")
