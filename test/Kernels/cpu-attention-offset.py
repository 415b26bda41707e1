# The query offset of the CPU attention kernels of runtime/src/cpu
# (braid_k_attention and braid_k_attention_grad with the q_offset field of
# braid_attention_params: context parallelism, a chunk of the queries at
# global positions q_offset.. against all keys and values) against a float64
# numpy attention over the whole sequence written here (independent of the
# kernels and of test/lib/braid_ref). Compiled here with the host compiler, so
# the test does not depend on the CMake wiring; the harness is
# Inputs/kernel_harness.py.
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include %braid_src/runtime/src/cpu/*.cpp -o %t.so
# RUN: %ctypes_python %s %t.so
#
# Checks, for random q [B, S, Hq, D], k, v over the whole sequence, causal or
# not, with and without RoPE, GQA (4 query heads over 2 kv heads) and MQA:
# - forward: the outputs of the chunks (each at q_offset = its first row)
#   concatenated along S equal full attention (rel <= 1e-5 in f32; bf16 / f16
#   storage 2^-8 / 2^-10 as in cpu-kernels.py);
# - backward: each chunk's dq equals its rows of the full dq, and the sums
#   over the chunks of dk and dv equal the full dk and dv (f32, 1e-5: each
#   chunk's contribution carries the f32 accumulation error of
#   cpu-grad-transformer.py, ~1e-7 of its largest element; a sum of <= 4 adds
#   a few of those);
# - q_offset = 0 over the whole sequence is whole-sequence attention;
# - the check can fail: a later chunk passed with q_offset 0 (wrong RoPE
#   angle, wrong causal horizon) is off by more than 5% of the output;
# - causal with q_offset + S > Skv and a negative q_offset abort.

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))

import numpy as np  # noqa: E402

import kernel_harness  # noqa: E402
from kernel_harness import (BF16, DTYPES, F16, F32, attn, call, declare, empty, main,  # noqa: E402
                            rel, store, values)

RNG = np.random.default_rng(90210)

declare(["braid_k_attention", "braid_k_attention_grad"])


# --- float64 reference over the whole sequence ------------------------------------

def rope(x, theta, pos):
    """Rotate-half RoPE of x [B, S, H, D] at positions pos [S]."""
    if theta is None:
        return x
    d = x.shape[-1]
    half = d // 2
    ang = pos[:, None].astype(np.float64) * theta ** (-2.0 * np.arange(half) / d)
    c, s = np.cos(ang)[None, :, None, :], np.sin(ang)[None, :, None, :]
    lo, hi = x[..., :half], x[..., half:]
    return np.concatenate([lo * c - hi * s, hi * c + lo * s], axis=-1)


def rope_back(g, theta, pos):
    """Gradient of the unrotated vector: the transposed rotation."""
    if theta is None:
        return g
    d = g.shape[-1]
    half = d // 2
    ang = pos[:, None].astype(np.float64) * theta ** (-2.0 * np.arange(half) / d)
    c, s = np.cos(ang)[None, :, None, :], np.sin(ang)[None, :, None, :]
    lo, hi = g[..., :half], g[..., half:]
    return np.concatenate([lo * c + hi * s, hi * c - lo * s], axis=-1)


def full_attention(q, k, v, do, causal, scale, theta):
    """Attention of all S queries (positions 0..S-1) and its VJP:
    (out, dq, dk, dv), float64."""
    b, s, hq, d = q.shape
    skv, hkv = k.shape[1], k.shape[2]
    g = hq // hkv
    qr, kr = rope(q, theta, np.arange(s)), rope(k, theta, np.arange(skv))
    ke = np.repeat(kr, g, axis=2)                       # query head h reads kv head h // g
    ve = np.repeat(v, g, axis=2)
    sc = scale * np.einsum("bshd,bthd->bhst", qr, ke)
    if causal:
        sc = np.where(np.arange(skv)[None, :] > np.arange(s)[:, None], -np.inf, sc)
    p = np.exp(sc - sc.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    out = np.einsum("bhst,bthe->bshe", p, ve)
    dp = np.einsum("bshe,bthe->bhst", do, ve)
    ds = p * (dp - np.sum(p * dp, axis=-1, keepdims=True))
    dq = rope_back(scale * np.einsum("bhst,bthd->bshd", ds, ke), theta, np.arange(s))
    dke = scale * np.einsum("bhst,bshd->bthd", ds, qr)
    dve = np.einsum("bhst,bshe->bthe", p, do)
    dk = rope_back(dke.reshape(b, skv, hkv, g, d).sum(axis=3), theta, np.arange(skv))
    dv = dve.reshape(b, skv, hkv, g, -1).sum(axis=3)
    return out, dq, dk, dv


def split(s, chunks):
    """[(offset, rows)] of `chunks` equal chunks, or of the given boundaries."""
    if isinstance(chunks, int):
        n = s // chunks
        return [(c * n, n) for c in range(chunks)]
    return [(a, e - a) for a, e in zip(chunks[:-1], chunks[1:])]


# --- tests ------------------------------------------------------------------------

class Case(kernel_harness.Case):
    rng = RNG


# (b, s, hq, hkv, d, dv, causal, theta, chunks)
CASES = [
    (2, 16, 4, 2, 8, 8, True, None, 2),          # GQA 4 over 2, causal
    (2, 16, 4, 2, 8, 8, True, 1e4, 2),           # ... with RoPE
    (2, 128, 4, 2, 8, 8, True, None, 4),         # chunks of 32 inside 64-row blocks
    (2, 128, 4, 2, 8, 8, True, 5e5, 4),
    (1, 130, 4, 2, 16, 12, True, 1e4, 2),        # chunks of 65: 64-row blocks + 1
    (1, 96, 4, 2, 16, 6, True, 1e4, [0, 5, 37, 70, 96]),  # uneven chunks, Dv != D
    (1, 96, 4, 2, 16, 6, False, 1e4, [0, 5, 37, 70, 96]),  # not causal: RoPE only
    (1, 300, 2, 1, 4, 2, True, 1e4, 3),          # far positions, MQA
    # D = 256: blocks of 32 query rows and (backward) 32 keys, chunk starts
    # not aligned to them
    (1, 80, 4, 2, 256, 128, True, 1e4, [0, 23, 50, 80]),
]


class AttentionOffset(Case):
    def chunks_forward(self, dt, qs, ks, vs, shape, causal, scale, theta, parts, wrong=None):
        """Concatenated outputs of the chunks; chunk `wrong` gets q_offset 0."""
        b, s, hq, hkv, d, dv, skv = shape
        outs = []
        for c, (off, n) in enumerate(parts):
            qc = np.ascontiguousarray(qs[:, off:off + n])
            o = empty((b, n, hq, dv), dt)
            call("braid_k_attention", dt, qc, ks, vs, o,
                 attn(b, n, skv, hq, hkv, d, dv, int(causal), scale, theta or 0.0,
                      0 if c == wrong else off))
            outs.append(values(o, dt).astype(np.float64))
        return np.concatenate(outs, axis=1)

    def chunks_backward(self, qs, ks, vs, dos, shape, causal, scale, theta, parts, wrong=None):
        """(concatenated dq, summed dk, summed dv) of the chunks, f32."""
        b, s, hq, hkv, d, dv, skv = shape
        dqs, dk, dvv = [], np.zeros((b, skv, hkv, d)), np.zeros((b, skv, hkv, dv))
        for c, (off, n) in enumerate(parts):
            qc = np.ascontiguousarray(qs[:, off:off + n])
            doc = np.ascontiguousarray(dos[:, off:off + n])
            gq = kernel_harness.poisoned((b, n, hq, d), F32)
            gk = kernel_harness.poisoned((b, skv, hkv, d), F32)
            gv = kernel_harness.poisoned((b, skv, hkv, dv), F32)
            call("braid_k_attention_grad", F32, qc, ks, vs, doc, gq, gk, gv,
                 attn(b, n, skv, hq, hkv, d, dv, int(causal), scale, theta or 0.0,
                      0 if c == wrong else off))
            for a in (gq, gk, gv):
                self.assertFalse(np.isnan(a).any(), "attention_grad_offset: NaN (unwritten)")
            dqs.append(gq.astype(np.float64))
            dk += gk
            dvv += gv
        return np.concatenate(dqs, axis=1), dk, dvv

    def test_forward_chunks(self):
        for b, s, hq, hkv, d, dv, causal, theta, chunks in CASES:
            scale = 1.0 / math.sqrt(d)
            parts = split(s, chunks)
            shape = (b, s, hq, hkv, d, dv, s)
            q32, k32 = self.randn(b, s, hq, d), self.randn(b, s, hkv, d)
            v32, do32 = self.randn(b, s, hkv, dv), self.randn(b, s, hq, dv)
            what = f" b={b} s={s} hq={hq} hkv={hkv} d={d} dv={dv} causal={causal} " \
                   f"theta={theta} chunks={chunks}"
            for dt in DTYPES:
                (qs, q), (ks, k), (vs, v) = (store(a, dt) for a in (q32, k32, v32))
                ref = full_attention(*(a.astype(np.float64) for a in (q, k, v)),
                                     do32.astype(np.float64), causal, scale, theta)[0]
                got = self.chunks_forward(dt, qs, ks, vs, shape, causal, scale, theta, parts)
                err = rel(got, ref)
                key = ("attention_offset", kernel_harness.DTN[dt])
                kernel_harness.MAX_ERR[key] = max(kernel_harness.MAX_ERR.get(key, 0.0), err)
                self.assertLessEqual(err, kernel_harness.TOL[dt],
                                     f"attention_offset {key[1]}{what}: rel error {err:.3g}")
                if dt != F32:
                    continue
                # q_offset = 0 over the whole sequence is whole-sequence attention.
                o0 = empty((b, s, hq, dv), dt)
                call("braid_k_attention", dt, qs, ks, vs, o0,
                     attn(b, s, s, hq, hkv, d, dv, int(causal), scale, theta or 0.0, 0))
                self.assertLessEqual(rel(o0, ref), 1e-5, what)
                # The check can fail: the last chunk at offset 0.
                bad = self.chunks_forward(dt, qs, ks, vs, shape, causal, scale, theta, parts,
                                          wrong=len(parts) - 1)
                self.assertGreater(rel(bad, ref), 0.05, f"q_offset ignored?{what}")

    def test_backward_chunks(self):
        for b, s, hq, hkv, d, dv, causal, theta, chunks in CASES:
            scale = 1.0 / math.sqrt(d)
            parts = split(s, chunks)
            shape = (b, s, hq, hkv, d, dv, s)
            q, k = self.randn(b, s, hq, d), self.randn(b, s, hkv, d)
            v, do = self.randn(b, s, hkv, dv), self.randn(b, s, hq, dv)
            what = f" b={b} s={s} hq={hq} hkv={hkv} d={d} dv={dv} causal={causal} " \
                   f"theta={theta} chunks={chunks}"
            _, rq, rk, rv = full_attention(*(a.astype(np.float64) for a in (q, k, v, do)),
                                           causal, scale, theta)
            gq, gk, gv = self.chunks_backward(q, k, v, do, shape, causal, scale, theta, parts)
            for name, got, ref in (("dq", gq, rq), ("dk", gk, rk), ("dv", gv, rv)):
                err = rel(got, ref)
                key = (f"attention_grad_offset.{name}", "f32")
                kernel_harness.MAX_ERR[key] = max(kernel_harness.MAX_ERR.get(key, 0.0), err)
                self.assertLessEqual(err, 1e-5, f"attention_grad_offset.{name}{what}: "
                                     f"rel error {err:.3g}")
            # The check can fail: the last chunk at offset 0.
            bq, bk, bv = self.chunks_backward(q, k, v, do, shape, causal, scale, theta, parts,
                                              wrong=len(parts) - 1)
            self.assertGreater(rel(bq, rq), 0.05, f"dq: q_offset ignored?{what}")
            self.assertGreater(rel(bk, rk), 0.05, f"dk: q_offset ignored?{what}")
            self.assertGreater(rel(bv, rv), 0.05, f"dv: q_offset ignored?{what}")

    def test_uncached_statistics(self):
        # 256 query heads over 1 kv head x 40 rows per chunk > kStatRows (8192):
        # the backward recomputes the row statistics per key block.
        b, s, hq, hkv, d, dv, causal, theta = 1, 80, 256, 1, 4, 4, True, 1e4
        scale, parts = 0.5, split(80, 2)
        q, k = self.randn(b, s, hq, d), self.randn(b, s, hkv, d)
        v, do = self.randn(b, s, hkv, dv), self.randn(b, s, hq, dv)
        _, rq, rk, rv = full_attention(*(a.astype(np.float64) for a in (q, k, v, do)),
                                       causal, scale, theta)
        gq, gk, gv = self.chunks_backward(q, k, v, do, (b, s, hq, hkv, d, dv, s), causal,
                                          scale, theta, parts)
        for name, got, ref in (("dq", gq, rq), ("dk", gk, rk), ("dv", gv, rv)):
            self.assertLessEqual(rel(got, ref), 1e-5, f"uncached {name}")

    def test_non_causal_without_rope_ignores_offset(self):
        # Neither the mask nor a rotation: q_offset changes nothing, bit for bit.
        b, s, hq, hkv, d, dv = 1, 12, 4, 2, 8, 8
        q, k, v, do = (self.randn(b, s, h, e) for h, e in ((hq, d), (hkv, d), (hkv, dv),
                                                           (hq, dv)))
        o0, o1 = empty((b, s, hq, dv), F32), empty((b, s, hq, dv), F32)
        call("braid_k_attention", F32, q, k, v, o0, attn(b, s, s, hq, hkv, d, dv, 0, 0.3, 0.0, 0))
        call("braid_k_attention", F32, q, k, v, o1,
             attn(b, s, s, hq, hkv, d, dv, 0, 0.3, 0.0, 1000))
        np.testing.assert_array_equal(o0, o1)


ABORT_SCRIPT = r"""
import ctypes, sys
import numpy as np
lib = ctypes.CDLL(sys.argv[1])
P, I, I4, D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_double
which = sys.argv[2]
q = np.zeros((1, 4, 2, 4), np.float32); k = np.zeros((1, 8, 1, 4), np.float32)
v = np.zeros((1, 8, 1, 4), np.float32); o = np.zeros((1, 4, 2, 4), np.float32)
dk = np.zeros_like(k); dv = np.zeros_like(v)
a = lambda x: x.ctypes.data
class Params(ctypes.Structure):  # braid_attention_params
    _fields_ = [(n, I) for n in ("batch", "seq", "seq_kv", "heads", "kv_heads", "head_dim",
                                 "v_head_dim")] + [("causal", I4), ("scale", D),
                                                   ("rope_theta", D), ("q_offset", I)]
AP = ctypes.POINTER(Params)
lib.braid_k_attention.argtypes = [P, I4, P, P, P, P, AP]
lib.braid_k_attention_grad.argtypes = [P, I4, P, P, P, P, P, P, P, AP]
def params(*fields):
    return ctypes.byref(Params(*fields))
if which == "past_end":    # rows 5..8 of 8 keys
    lib.braid_k_attention(None, 0, a(q), a(k), a(v), a(o), params(1, 4, 8, 2, 1, 4, 4, 1, 0.5,
                                                                  0.0, 5))
elif which == "grad_past_end":
    lib.braid_k_attention_grad(None, 0, a(q), a(k), a(v), a(o), a(o), a(dk), a(dv),
                               params(1, 4, 8, 2, 1, 4, 4, 1, 0.5, 0.0, 5))
elif which == "negative":
    lib.braid_k_attention(None, 0, a(q), a(k), a(v), a(o), params(1, 4, 8, 2, 1, 4, 4, 0, 0.5,
                                                                  0.0, -1))
elif which == "short_keys":  # causal at offset 0: a row must see its own key
    lib.braid_k_attention(None, 0, a(q), a(k), a(v), a(o), params(1, 4, 2, 2, 1, 4, 4, 1, 0.5,
                                                                  0.0, 0))
print("returned")
"""


class Aborts(Case):
    def test_limits(self):
        self.check_aborts(ABORT_SCRIPT, (
            ("past_end", "braid: attention: causal attention needs q_offset + seq <= seq_kv, "
                         "got 5 + 4 and 8"),
            ("grad_past_end", "braid: attention_grad: causal attention needs q_offset + seq <= "
                              "seq_kv, got 5 + 4 and 8"),
            ("negative", "braid: attention: negative query offset -1"),
            ("short_keys", "braid: attention: causal attention needs q_offset + seq <= "
                           "seq_kv, got 0 + 4 and 2")))


if __name__ == "__main__":
    main("cpu-attention-offset.py", width=32)
