# The attention kernels of the runtime's CPU kernel library as CMake builds it
# (with OpenBLAS when found): in f32 they run as blocked GEMMs
# (runtime/src/cpu/attention_gemm.cpp); checked here against float64 numpy,
# element by element, within a first-order bound of f32 rounding (u = 2^-24,
# gamma_n = n u / (1 - n u), Higham 3.1) written out per output:
#   scores    |d(scale q'.k')| <= Es = gamma_(D+4) scale max_t |q'|.|k'_t| (the
#             +4: the rotated q', k' carry 2u each)
#   P         relative error <= R = 2 Es + u max_t |x_t - m| + 6u (x - m
#             rounded, the exp's ~2u, the normalization)
#   out       (2R + gamma_Skv) sum_t P|v_t| + u|out|; lse: Es + R + 2u|lse|
#   backward  dP: gamma_Dv |do|.|v|; delta and dS from those; dq, dk, dv the
#             sums of those errors times |k'|, |q'|, |do| plus gamma of the
#             sum's length, and the transposed rotation's mixing of halves.
# Cases: whole sequence (braid_k_attention[_grad]), a query chunk at an offset
# (their q_offset), key blocks with positions (_block, _block_grad: zigzag rows,
# unsorted key positions, a block no query sees); causal and not, RoPE and
# not, GQA / MQA, Dv != D, batch 2, sequences not multiples of the 64-row
# query block. Also:
#   - results are identical bit for bit with BRAID_CPU_THREADS=1 and 2;
#   - under BRAID_CPU_ACCUMULATE=f64 every output equals, bit for bit, the
#     reference kernels compiled without BLAS (argv[2]);
#   - the check can fail: a wrong scale is far outside the bound.
#
# RUN: %ctypes_cxx -std=c++17 -O2 -fPIC -shared -I%braid_src/runtime/include %braid_src/runtime/src/cpu/*.cpp -o %t.ref.so
# RUN: %ctypes_python %s %braid_rt_lib/libbraid_kernels_cpu.so %t.ref.so %t.dir

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
U = 2.0 ** -24

# (name, batch, seq, seq_kv, heads, kv_heads, d, dv, causal, theta, q_offset)
FULL = [
    ("causal gqa rope", 2, 100, 100, 4, 2, 16, 16, 1, 10000.0, 0),
    ("causal mqa dv!=d", 1, 150, 150, 4, 1, 32, 24, 1, 0.0, 0),
    ("bidirectional", 2, 70, 90, 2, 2, 8, 8, 0, 500.0, 0),
    ("one row", 1, 1, 1, 2, 1, 4, 4, 1, 10000.0, 0),
    ("offset causal", 1, 70, 150, 4, 2, 16, 16, 1, 10000.0, 60),
    ("offset bidirectional", 1, 50, 80, 2, 1, 8, 12, 0, 0.0, 10),
]


def zigzag(seq, n):
    c = seq // (2 * n)
    order = [x for j in range(n) for x in (j, 2 * n - 1 - j)]
    return np.concatenate([np.arange(ch * c, (ch + 1) * c) for ch in order]).astype(np.int64)


def block_cases():
    """(name, batch, heads, kv_heads, d, dv, causal, theta, q_pos, k_pos)."""
    z = zigzag(260, 2)  # rank 0 holds z[:130], rank 1 z[130:]
    perm = np.random.default_rng(5).permutation(200)[:90].astype(np.int64)
    return [
        ("zigzag own block", 2, 4, 2, 16, 16, 1, 10000.0, z[:130], z[:130]),
        ("zigzag other block", 1, 4, 2, 16, 8, 1, 10000.0, z[:130], z[130:]),
        ("unsorted keys", 1, 2, 1, 8, 8, 1, 0.0, np.arange(70, 170, dtype=np.int64), perm),
        ("future block", 1, 2, 2, 8, 8, 1, 0.0, np.arange(64, dtype=np.int64),
         np.arange(100, 170, dtype=np.int64)),
        ("bidirectional block", 1, 2, 1, 8, 8, 0, 500.0, z[130:], z[:130]),
    ]


def inputs(seed, b, s, skv, hq, hkv, d, dv):
    rng = np.random.default_rng(seed)
    f = lambda *sh: rng.standard_normal(sh).astype(np.float32)  # noqa: E731
    return f(b, s, hq, d), f(b, skv, hkv, d), f(b, skv, hkv, dv), f(b, s, hq, dv)


# --- child: run every case on the library, save the outputs ------------------------

def run_child(lib_file, out_file):
    lib = ctypes.CDLL(lib_file)
    for name, args in SIGS.items():
        getattr(lib, name).argtypes = args
        getattr(lib, name).restype = None
    a = lambda x: x.ctypes.data  # noqa: E731
    res = {}
    for i, (name, b, s, skv, hq, hkv, d, dv, causal, theta, off) in enumerate(FULL):
        q, k, v, do = inputs(i, b, s, skv, hq, hkv, d, dv)
        scale = 1.0 / np.sqrt(d) * 1.1
        o = np.full((b, s, hq, dv), np.nan, np.float32)
        dq, dk, dvv = (np.full(x.shape, np.nan, np.float32) for x in (q, k, v))
        p = params(b, s, skv, hq, hkv, d, dv, causal, scale, theta, off)
        lib.braid_k_attention(None, 0, a(q), a(k), a(v), a(o), p)
        lib.braid_k_attention_grad(None, 0, a(q), a(k), a(v), a(do), a(dq), a(dk), a(dvv), p)
        res.update({f"{i}.out": o, f"{i}.dq": dq, f"{i}.dk": dk, f"{i}.dv": dvv})
    for i, (name, b, hq, hkv, d, dv, causal, theta, qp, kp) in enumerate(block_cases()):
        s, skv = len(qp), len(kp)
        q, k, v, do = inputs(100 + i, b, s, skv, hq, hkv, d, dv)
        rng = np.random.default_rng(200 + i)
        scale = 1.0 / np.sqrt(d)
        o = np.full((b, s, hq, dv), np.nan, np.float32)
        lse = np.full((b, s, hq), np.nan, np.float32)
        p = params(b, s, skv, hq, hkv, d, dv, causal, scale, theta, 0)
        lib.braid_k_attention_block(None, 0, a(q), a(k), a(v), a(qp), a(kp), a(o), a(lse), p)
        # The backward's statistics: this block's lse plus other blocks' share.
        glse = np.where(np.isfinite(lse), lse + np.float32(0.3), -np.inf).astype(np.float32)
        delta = rng.standard_normal((b, s, hq)).astype(np.float32)
        acc = [(rng.standard_normal(x.shape) * 1e-3).astype(np.float32) for x in (q, k, v)]
        res.update({f"b{i}.acc0.{j}": x.copy() for j, x in enumerate(acc)})
        lib.braid_k_attention_block_grad(None, 0, a(q), a(k), a(v), a(do), a(qp), a(kp),
                                         a(glse), a(delta), a(acc[0]), a(acc[1]), a(acc[2]), p)
        res.update({f"b{i}.out": o, f"b{i}.lse": lse, f"b{i}.glse": glse,
                    f"b{i}.delta": delta, f"b{i}.dq": acc[0], f"b{i}.dk": acc[1],
                    f"b{i}.dv": acc[2]})
    np.savez(out_file, **res)


# --- float64 reference and bounds ----------------------------------------------------

def gam(n):
    return n * U / (1 - n * U)


def rope(x, theta, pos):
    if not theta:
        return x
    half = x.shape[-1] // 2
    ang = pos[:, None].astype(np.float64) * theta ** (-2.0 * np.arange(half) / x.shape[-1])
    c, s = np.cos(ang)[None, :, None, :], np.sin(ang)[None, :, None, :]
    lo, hi = x[..., :half], x[..., half:]
    return np.concatenate([lo * c - hi * s, hi * c + lo * s], axis=-1)


def rope_back(g, theta, pos):
    if not theta:
        return g
    half = g.shape[-1] // 2
    ang = pos[:, None].astype(np.float64) * theta ** (-2.0 * np.arange(half) / g.shape[-1])
    c, s = np.cos(ang)[None, :, None, :], np.sin(ang)[None, :, None, :]
    lo, hi = g[..., :half], g[..., half:]
    return np.concatenate([lo * c + hi * s, hi * c - lo * s], axis=-1)


def mix(bound, theta):
    """A bound on a vector rotated back: each component mixes i and i +- D/2."""
    if not theta:
        return bound
    half = bound.shape[-1] // 2
    return bound + np.concatenate([bound[..., half:], bound[..., :half]], axis=-1)


def reference(q, k, v, do, qpos, kpos, causal, scale, theta, lse_in=None, delta_in=None):
    """float64 (value, bound) of out, lse, dq, dk, dv. With lse_in / delta_in
    (the block backward) P = e^(x - lse_in) and delta = delta_in."""
    q, k, v, do = (x.astype(np.float64) for x in (q, k, v, do))
    hq, hkv, d, dv = q.shape[2], k.shape[2], q.shape[3], v.shape[3]
    g, skv, s = hq // hkv, k.shape[1], q.shape[1]
    qr, kr = rope(q, theta, qpos), rope(k, theta, kpos)
    ke, ve = np.repeat(kr, g, axis=2), np.repeat(v, g, axis=2)
    vis = (kpos[None, :] <= qpos[:, None]) if causal else np.ones((s, skv), bool)
    x = scale * np.einsum("bshd,bthd->bhst", qr, ke)
    ax = scale * np.einsum("bshd,bthd->bhst", np.abs(qr), np.abs(ke))
    xm = np.where(vis, x, -np.inf)
    es = gam(d + 4) * np.where(vis, ax, 0.0).max(axis=-1, initial=0.0)
    if lse_in is None:
        m = xm.max(axis=-1, initial=-np.inf)
        m0 = np.where(np.isfinite(m), m, 0.0)
        e = np.where(vis, np.exp(np.where(vis, x, 0.0) - m0[..., None]), 0.0)
        l = e.sum(axis=-1)
        p = e / np.where(l > 0, l, 1.0)[..., None]
        r = 2 * es + U * np.where(vis, np.abs(x - m0[..., None]), 0.0).max(-1, initial=0.0) \
            + 6 * U
        prel = 2 * r
    else:
        ls = lse_in.astype(np.float64).transpose(0, 2, 1)  # [b, h, s]
        live = np.isfinite(ls)
        l0 = np.where(live, ls, 0.0)
        p = np.where(vis & live[..., None], np.exp(np.where(vis, x, 0.0) - l0[..., None]), 0.0)
        r = es + U * np.where(vis, np.abs(x - l0[..., None]), 0.0).max(-1, initial=0.0) + 4 * U
        prel = r
        l = m0 = None
    T = lambda z: z.transpose(0, 2, 1)  # noqa: E731  [b,h,s] -> [b,s,h]
    res = {}
    if lse_in is None:
        out = np.einsum("bhst,bthe->bshe", p, ve)
        res["out"] = (out, T(prel + gam(skv))[..., None] * np.einsum("bhst,bthe->bshe", p,
                                                                     np.abs(ve))
                      + U * np.abs(out) + 1e-37)
        lse = np.where(l > 0, m0 + np.log(np.where(l > 0, l, 1.0)), -np.inf)
        res["lse"] = (T(lse), T(es + r + 2 * U * np.abs(np.where(l > 0, lse, 0.0))) + 1e-37)
    dp = np.einsum("bshe,bthe->bhst", do, ve)
    w = np.einsum("bshe,bthe->bhst", np.abs(do), np.abs(ve))
    if delta_in is None:
        delta = (p * dp).sum(-1)
        ddelta = (p * (prel[..., None] * np.abs(dp) + gam(dv) * w)).sum(-1) \
            + gam(skv) * (p * np.abs(dp)).sum(-1) + U * np.abs(delta)
    else:
        delta = delta_in.astype(np.float64).transpose(0, 2, 1)
        ddelta = np.zeros_like(delta)
    ds = p * (dp - delta[..., None])
    dds = prel[..., None] * p * np.abs(dp - delta[..., None]) \
        + p * (gam(dv) * w + ddelta[..., None]) + 2 * U * np.abs(ds)
    dq = scale * rope_back(np.einsum("bhst,bthd->bshd", ds, ke), theta, qpos)
    dq_b = scale * mix(np.einsum("bhst,bthd->bshd", dds, np.abs(ke))
                       + (gam(skv) + 4 * U) * np.einsum("bhst,bthd->bshd", np.abs(ds),
                                                         np.abs(ke)), theta)
    res["dq"] = (dq, dq_b + U * np.abs(dq) + 1e-37)
    grp = lambda z: z.reshape(z.shape[0], skv, hkv, g, -1).sum(axis=3)  # noqa: E731
    nq = s * g
    dk = scale * rope_back(grp(np.einsum("bhst,bshd->bthd", ds, qr)), theta, kpos)
    dk_b = scale * mix(grp(np.einsum("bhst,bshd->bthd", dds, np.abs(qr))
                           + (gam(nq) + 4 * U) * np.einsum("bhst,bshd->bthd", np.abs(ds),
                                                            np.abs(qr))), theta)
    res["dk"] = (dk, dk_b + U * np.abs(dk) + 1e-37)
    dvv = grp(np.einsum("bhst,bshe->bthe", p, do))
    dv_b = grp(np.einsum("bhst,bshe->bthe", prel[..., None] * p, np.abs(do))
               + (gam(nq) + 2 * U) * np.einsum("bhst,bshe->bthe", p, np.abs(do)))
    res["dv"] = (dvv, dv_b + U * np.abs(dvv) + 1e-37)
    return res


def check(got, ref, bound, what, failures, worst):
    if got.shape != ref.shape:
        failures.append(f"{what}: shape {got.shape} != {ref.shape}")
        return
    g64 = got.astype(np.float64)
    inf = ~np.isfinite(ref)
    if not np.array_equal(g64[inf], ref[inf]) or np.isnan(g64[~inf]).any():
        failures.append(f"{what}: non-finite values differ")
        return
    ratio = float(np.max(np.abs(g64[~inf] - ref[~inf]) / bound[~inf], initial=0.0))
    worst[0] = max(worst[0], ratio)
    if ratio > 1:
        failures.append(f"{what}: error {ratio:.3g} x the bound")


def check_f32(res, failures, scale_factor=1.0):
    worst = [0.0]
    for i, (name, b, s, skv, hq, hkv, d, dv, causal, theta, off) in enumerate(FULL):
        q, k, v, do = inputs(i, b, s, skv, hq, hkv, d, dv)
        scale = 1.0 / np.sqrt(d) * 1.1 * scale_factor
        ref = reference(q, k, v, do, off + np.arange(s), np.arange(skv), causal, scale, theta)
        for key in ("out", "dq", "dk", "dv"):
            check(res[f"{i}.{key}"], *ref[key], f"{name} {key}", failures, worst)
    for i, (name, b, hq, hkv, d, dv, causal, theta, qp, kp) in enumerate(block_cases()):
        s, skv = len(qp), len(kp)
        q, k, v, do = inputs(100 + i, b, s, skv, hq, hkv, d, dv)
        scale = 1.0 / np.sqrt(d) * scale_factor
        ref = reference(q, k, v, do, qp, kp, causal, scale, theta)
        for key in ("out", "lse"):
            check(res[f"b{i}.{key}"], *ref[key], f"{name} {key}", failures, worst)
        ref = reference(q, k, v, do, qp, kp, causal, scale, theta, res[f"b{i}.glse"],
                        res[f"b{i}.delta"])
        for j, key in enumerate(("dq", "dk", "dv")):
            val, bound = ref[key]
            acc0 = res[f"b{i}.acc0.{j}"].astype(np.float64)
            check(res[f"b{i}.{key}"], acc0 + val, bound + U * np.abs(acc0 + val),
                  f"{name} block_grad {key}", failures, worst)
    return worst[0]


def main():
    lib_path, ref_path, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)

    def child(lib, env_updates, tag):
        env = dict(os.environ)
        env.pop("BRAID_CPU_ACCUMULATE", None)
        env.pop("BRAID_CPU_THREADS", None)
        env.update(env_updates)
        out = os.path.join(work, tag + ".npz")
        r = subprocess.run([sys.executable, __file__, "--child", lib, out], env=env,
                           capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"FAIL: {tag} child: {r.stdout}{r.stderr}")
        return dict(np.load(out))

    failures = []
    f32 = child(lib_path, {"BRAID_CPU_THREADS": "2"}, "f32-t2")
    worst = check_f32(f32, failures)
    print(f"f32: worst error {worst:.3g} of the bound")
    f32t1 = child(lib_path, {"BRAID_CPU_THREADS": "1"}, "f32-t1")
    for key in f32:
        if not np.array_equal(f32[key], f32t1[key], equal_nan=True):
            failures.append(f"{key}: differs between 1 and 2 threads")
    # f64 accumulation keeps the reference kernels, bit for bit.
    f64 = child(lib_path, {"BRAID_CPU_ACCUMULATE": "f64", "BRAID_CPU_THREADS": "2"}, "f64")
    ref = child(ref_path, {"BRAID_CPU_THREADS": "2"}, "reference")
    for key in ref:
        if not np.array_equal(f64[key], ref[key], equal_nan=True):
            failures.append(f"{key}: BRAID_CPU_ACCUMULATE=f64 differs from the reference")
    # The check can fail: outputs of a 1% larger scale are outside the bound.
    neg = []
    check_f32(f32, neg, scale_factor=1.01)
    if not neg:
        failures.append("negative control: a 1% wrong scale passed the bound")
    if failures:
        sys.exit("FAIL\n" + "\n".join(failures))
    print("PASS")


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        run_child(sys.argv[2], sys.argv[3])
    else:
        main()
