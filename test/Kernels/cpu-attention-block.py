# The attention-by-key-blocks kernels of runtime/src/cpu (attention_block.cpp:
# braid_k_sequence_positions, braid_k_attention_block, braid_k_attention_merge,
# braid_k_attention_delta, braid_k_attention_block_grad: ring / zigzag context
# parallelism) against a float64 numpy attention over the whole sequence
# written here (independent of the kernels and of test/lib/braid_ref).
# Compiled here with the host compiler, so the test does not depend on the
# CMake wiring; the harness is Inputs/kernel_harness.py.
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include %braid_src/runtime/src/cpu/*.cpp -o %t.so
# RUN: %ctypes_python %s %t.so
#
# Checks:
# - sequence_positions: natural order and zigzag over n = 1, 2, 4 ranks, whole
#   sequences and sub-ranges (each rank's rows, odd ranges, empty), against
#   the chunk order 0, 2n-1, 1, 2n-2, ... built here; bad arguments abort.
# - forward: the global sequence (positions 0..S-1) split over cp = 2 and 4
#   ranks, in natural and zigzag layouts; each rank runs attention_block of
#   its query rows against every rank's key block (in ring order, starting
#   with its own) and merges them with attention_merge from (0, -inf). The
#   merged output equals the rank's rows of full attention and the merged lse
#   the rows' log-sum-exp, rel <= 1e-5 for every storage type of q, k, v
#   (f32, bf16, f16): the reference takes the stored values and the outputs
#   and statistics are f32, so bf16 / f16 add no rounding of their own (far
#   inside the harness's TOL 2^-8 / 2^-10). Causal and not, RoPE and not,
#   GQA (4 over 2), MQA, Dv != D, two query blocks of 32 rows (D = 256),
#   batch 2. Measured: ~4e-7 (out), ~2e-7 (lse). A single block's
#   (out, lse), including rows that see none of its keys (0, -inf), equals
#   the numpy block attention; over the whole sequence attention_block agrees
#   with braid_k_attention (1e-6).
# - merge: both -inf -> (0, -inf) (even over a garbage out), one -inf -> the
#   other side exactly, and the formula against numpy in general.
# - delta: dout . out per row against numpy (1e-6).
# - backward: delta from dout and the merged out; per rank block_grad over
#   every key block accumulates dq and each key block's dk / dv; dq equals the
#   rank's rows of the full dq and the accumulated dk / dv the full dk / dv
#   (1e-5 for q, k, v, dout stored f32 / bf16 / f16: f32 accumulators;
#   measured ~5e-7); rows with lse = -inf add nothing (no NaN); the kernel
#   adds into the accumulators, it does not overwrite them.
# - the check can fail: zigzag key blocks passed with natural positions are
#   off by more than 5% in the output, dq and dk.
# - wrong arguments abort with a message.

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))

import numpy as np  # noqa: E402

import kernel_harness  # noqa: E402
from kernel_harness import (AP, DTN, DTYPES, F32, I, I4, P, attn, call,  # noqa: E402
                            declare, empty, main, rel, store)

RNG = np.random.default_rng(4242)

declare(["braid_k_attention"], {
    "braid_k_sequence_positions": [P, P, I, I, I, I],
    "braid_k_attention_block": [P, I4, P, P, P, P, P, P, P, AP],
    "braid_k_attention_merge": [P, P, P, P, P, I, I],
    "braid_k_attention_delta": [P, I4, P, P, P, I, I],
    "braid_k_attention_block_grad": [P, I4, P, P, P, P, P, P, P, P, P, P, P, AP],
})


# --- float64 reference --------------------------------------------------------------

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


def attention(q, k, v, qpos, kpos, causal, scale, theta, do=None):
    """Attention of queries at qpos over keys at kpos (float64): (out, lse[B,S,H]) and,
    with do, (dq, dk, dv). A row that sees no key: out 0, lse -inf (no gradient)."""
    b, s, hq, d = q.shape
    skv, hkv = k.shape[1], k.shape[2]
    g = hq // hkv
    qr, kr = rope(q, theta, qpos), rope(k, theta, kpos)
    ke, ve = np.repeat(kr, g, axis=2), np.repeat(v, g, axis=2)  # head h reads h // g
    sc = scale * np.einsum("bshd,bthd->bhst", qr, ke)
    if causal:
        sc = np.where(kpos[None, :] > qpos[:, None], -np.inf, sc)
    m = sc.max(axis=-1, keepdims=True) if skv else np.full(sc.shape[:-1] + (1,), -np.inf)
    m0 = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(sc - m0)
    l = e.sum(axis=-1, keepdims=True)
    p = np.where(l > 0, e / np.where(l > 0, l, 1.0), 0.0)
    out = np.einsum("bhst,bthe->bshe", p, ve)
    lse = np.where(l[..., 0] > 0, m0[..., 0] + np.log(np.where(l[..., 0] > 0, l[..., 0], 1.0)),
                   -np.inf).transpose(0, 2, 1)
    if do is None:
        return out, lse
    dp = np.einsum("bshe,bthe->bhst", do, ve)
    ds = p * (dp - np.sum(p * dp, axis=-1, keepdims=True))
    dq = rope_back(scale * np.einsum("bhst,bthd->bshd", ds, ke), theta, qpos)
    dke = scale * np.einsum("bhst,bshd->bthd", ds, qr)
    dve = np.einsum("bhst,bshe->bthe", p, do)
    dk = rope_back(dke.reshape(b, skv, hkv, g, d).sum(axis=3), theta, kpos)
    dv = dve.reshape(b, skv, hkv, g, -1).sum(axis=3)
    return out, lse, dq, dk, dv


def zigzag_positions(seq, n):
    """Positions of the stored rows of a sequence in zigzag order over n ranks:
    chunks 0, 2n-1, 1, 2n-2, ... of seq / 2n rows."""
    c = seq // (2 * n)
    order = [x for j in range(n) for x in (j, 2 * n - 1 - j)]
    return np.concatenate([np.arange(ch * c, (ch + 1) * c) for ch in order]).astype(np.int64)


def rank_positions(seq, cp, layout):
    """[positions of rank r's rows] for r < cp."""
    glob = zigzag_positions(seq, cp) if layout == "zigzag" else np.arange(seq, dtype=np.int64)
    n = seq // cp
    return [np.ascontiguousarray(glob[r * n:(r + 1) * n]) for r in range(cp)]


def positions(count, start, seq, zigzag):
    pos = np.full(max(count, 1), -7, np.int64)
    call("braid_k_sequence_positions", pos, count, start, seq, zigzag)
    return pos[:count]


# --- ring forward / backward through the kernels ---------------------------------

def ring_forward(dt, qs, ks, vs, qpos_ranks, kpos_ranks, shape, causal, scale, theta):
    """Per rank: (merged out [B, n, Hq, Dv] f32, merged lse [B, n, Hq] f32). q/k/v
    stored (dt) per rank; kpos_ranks: the positions passed with each key block."""
    b, hq, hkv, d, dv = shape
    cp = len(qs)
    res = []
    for r in range(cp):
        n = qs[r].shape[1]
        o = np.zeros((b, n, hq, dv), np.float32)
        lse = np.full((b, n, hq), -np.inf, np.float32)
        for step in range(cp):
            j = (r - step) % cp  # ring order: own block first
            nk = ks[j].shape[1]
            bo = kernel_harness.poisoned((b, n, hq, dv), F32)
            bl = kernel_harness.poisoned((b, n, hq), F32)
            call("braid_k_attention_block", dt, qs[r], ks[j], vs[j], qpos_ranks[r],
                 kpos_ranks[j], bo, bl,
                 attn(b, n, nk, hq, hkv, d, dv, int(causal), scale, theta or 0.0))
            assert not np.isnan(bo).any() and not np.isnan(bl).any(), "unwritten block output"
            call("braid_k_attention_merge", o, lse, bo, bl, b * n * hq, dv)
        res.append((o, lse))
    return res


def ring_backward(dt, qs, ks, vs, dos, fwd, qpos_ranks, kpos_ranks, shape, causal, scale,
                  theta):
    """(dq per rank, dk per key block, dv per key block), f32 accumulators."""
    b, hq, hkv, d, dv = shape
    cp = len(qs)
    dqs = [np.zeros((b, q.shape[1], hq, d), np.float32) for q in qs]
    dks = [np.zeros((b, k.shape[1], hkv, d), np.float32) for k in ks]
    dvs = [np.zeros((b, k.shape[1], hkv, dv), np.float32) for k in ks]
    for r in range(cp):
        n = qs[r].shape[1]
        o, lse = fwd[r]
        delta = kernel_harness.poisoned((b, n, hq), F32)
        call("braid_k_attention_delta", dt, dos[r], o, delta, b * n * hq, dv)
        for step in range(cp):
            j = (r - step) % cp
            call("braid_k_attention_block_grad", dt, qs[r], ks[j], vs[j], dos[r],
                 qpos_ranks[r], kpos_ranks[j], lse, delta, dqs[r], dks[j], dvs[j],
                 attn(b, n, ks[j].shape[1], hq, hkv, d, dv, int(causal), scale, theta or 0.0))
    return dqs, dks, dvs


def record(key, err):
    kernel_harness.MAX_ERR[key] = max(kernel_harness.MAX_ERR.get(key, 0.0), err)


# --- tests --------------------------------------------------------------------------

class Case(kernel_harness.Case):
    rng = RNG


class SequencePositions(Case):
    def test_natural_and_zigzag(self):
        for seq, n in ((16, 1), (16, 2), (16, 4), (24, 2), (24, 4), (40, 4), (8, 4)):
            ref = zigzag_positions(seq, n)
            self.assertEqual(sorted(ref.tolist()), list(range(seq)))
            np.testing.assert_array_equal(positions(seq, 0, seq, n), ref)
            per = seq // n
            for r in range(n):  # each rank's rows
                np.testing.assert_array_equal(positions(per, r * per, seq, n),
                                              ref[r * per:(r + 1) * per])
            for start, count in ((1, seq - 2), (3, 5), (seq - 1, 1), (seq // 2, 0)):
                np.testing.assert_array_equal(positions(count, start, seq, n),
                                              ref[start:start + count], f"{seq} {n} {start}")
        np.testing.assert_array_equal(positions(7, 0, 7, 0), np.arange(7))
        np.testing.assert_array_equal(positions(5, 10, 15, 0), np.arange(10, 15))
        np.testing.assert_array_equal(positions(3, 1, 1 << 40, 0),
                                      np.arange(1, 4))
        # zigzag with n = 1: chunks 0, 1 -> natural order
        np.testing.assert_array_equal(positions(12, 0, 12, 1), np.arange(12))
        # n = 2, seq = 8: chunks of 2 stored 0, 3, 1, 2
        np.testing.assert_array_equal(positions(8, 0, 8, 2), [0, 1, 6, 7, 2, 3, 4, 5])


# (b, s, hq, hkv, d, dv, causal, theta)
CASES = [
    (2, 16, 4, 2, 8, 8, True, 1e4),      # GQA, causal, RoPE
    (2, 16, 4, 2, 8, 8, True, None),     # no RoPE
    (1, 24, 4, 2, 8, 8, False, 1e4),     # not causal: RoPE only
    (1, 24, 4, 1, 16, 6, True, 5e5),     # MQA, Dv != D
    (1, 16, 2, 2, 4, 4, False, None),    # plain MHA, neither
]
CPS = (2, 4)
LAYOUTS = ("natural", "zigzag")


class Forward(Case):
    def rank_inputs(self, arrays, pos_ranks):
        """Each rank's rows of the global arrays [B, S, ...] (at its positions)."""
        return [[np.ascontiguousarray(a[:, p]) for p in pos_ranks] for a in arrays]

    def test_ring_forward(self):
        for b, s, hq, hkv, d, dv, causal, theta in CASES:
            scale = 1.0 / math.sqrt(d)
            q32, k32 = self.randn(b, s, hq, d), self.randn(b, s, hkv, d)
            v32 = self.randn(b, s, hkv, dv)
            for dt in DTYPES:
                (qs, q), (ks, k), (vs, v) = (store(a, dt) for a in (q32, k32, v32))
                gpos = np.arange(s, dtype=np.int64)
                rout, rlse = attention(*(a.astype(np.float64) for a in (q, k, v)), gpos, gpos,
                                       causal, scale, theta)
                for cp in CPS:
                    for layout in LAYOUTS:
                        pr = rank_positions(s, cp, layout)
                        qr, kr, vr = self.rank_inputs((qs, ks, vs), pr)
                        res = ring_forward(dt, qr, kr, vr, pr, pr, (b, hq, hkv, d, dv), causal,
                                           scale, theta)
                        what = f" b={b} s={s} hq={hq} hkv={hkv} d={d} dv={dv} " \
                               f"causal={causal} theta={theta} cp={cp} {layout}"
                        for r, (o, lse) in enumerate(res):
                            err = rel(o, rout[:, pr[r]])
                            lerr = rel(lse, rlse[:, pr[r]])
                            record(("block+merge out", DTN[dt]), err)
                            record(("block+merge lse", DTN[dt]), lerr)
                            self.assertLessEqual(err, 1e-5, f"out {DTN[dt]}{what} rank {r}: "
                                                 f"rel {err:.3g}")
                            self.assertLessEqual(lerr, 1e-5, f"lse {DTN[dt]}{what} rank {r}")

    def test_single_blocks(self):
        # One block's (out, lse) against numpy, rows that see none of its keys included.
        b, s, hq, hkv, d, dv, theta = 2, 24, 4, 2, 8, 6, 1e4
        scale = 0.4
        q, k, v = self.randn(b, s, hq, d), self.randn(b, s, hkv, d), self.randn(b, s, hkv, dv)
        pr = rank_positions(s, 3, "zigzag")
        for causal in (True, False):
            for r in range(3):
                for j in range(3):
                    qr, kr, vr = (np.ascontiguousarray(a[:, p]) for a, p in
                                  ((q, pr[r]), (k, pr[j]), (v, pr[j])))
                    ro, rl = attention(qr.astype(np.float64), kr.astype(np.float64),
                                       vr.astype(np.float64), pr[r], pr[j], causal, scale,
                                       theta)
                    o = kernel_harness.poisoned((b, 8, hq, dv), F32)
                    lse = kernel_harness.poisoned((b, 8, hq), F32)
                    call("braid_k_attention_block", F32, qr, kr, vr, pr[r], pr[j], o, lse,
                         attn(b, 8, 8, hq, hkv, d, dv, int(causal), scale, theta))
                    blind = np.isneginf(rl)
                    if causal and r == 0 and j == 2:  # rank 0 holds 0..3, 20..23; 2 holds 8..15
                        self.assertTrue(blind.any() and not blind.all())
                    np.testing.assert_array_equal(np.isneginf(lse), blind)
                    self.assertTrue((o[blind] == 0).all())
                    err = rel(o, ro)
                    lerr = rel(np.where(blind, 0, lse), np.where(blind, 0, rl))
                    record(("block out", "f32"), err)
                    record(("block lse", "f32"), lerr)
                    self.assertLessEqual(err, 1e-5, f"block {r} x {j} causal={causal}")
                    self.assertLessEqual(lerr, 1e-5, f"block lse {r} x {j} causal={causal}")

    def test_two_query_blocks(self):
        # D = 256: query blocks of 32 rows; a rank of 64 zigzag rows spans two.
        b, s, hq, hkv, d, dv, theta, cp = 1, 128, 2, 1, 256, 128, 1e4, 2
        scale = 1.0 / math.sqrt(d)
        q, k, v = self.randn(b, s, hq, d), self.randn(b, s, hkv, d), self.randn(b, s, hkv, dv)
        do = self.randn(b, s, hq, dv)
        gpos = np.arange(s, dtype=np.int64)
        ro, rl, rq, rk, rv = attention(*(a.astype(np.float64) for a in (q, k, v)), gpos, gpos,
                                       True, scale, theta, do=do.astype(np.float64))
        pr = rank_positions(s, cp, "zigzag")
        qr, kr, vr, dor = ([np.ascontiguousarray(a[:, p]) for p in pr] for a in (q, k, v, do))
        res = ring_forward(F32, qr, kr, vr, pr, pr, (b, hq, hkv, d, dv), True, scale, theta)
        gq, gk, gv = ring_backward(F32, qr, kr, vr, dor, res, pr, pr, (b, hq, hkv, d, dv),
                                   True, scale, theta)
        for r in range(cp):
            for name, got, ref in (("out", res[r][0], ro), ("lse", res[r][1], rl),
                                   ("dq", gq[r], rq), ("dk", gk[r], rk), ("dv", gv[r], rv)):
                err = rel(got, ref[:, pr[r]])
                record((f"D=256 {name}", "f32"), err)
                self.assertLessEqual(err, 1e-5, f"D=256 {name} rank {r}: {err:.3g}")

    def test_whole_sequence_is_attention(self):
        for b, s, hq, hkv, d, dv, causal, theta in CASES:
            scale = 1.0 / math.sqrt(d)
            q, k, v = self.randn(b, s, hq, d), self.randn(b, s, hkv, d), self.randn(b, s, hkv, dv)
            pos = np.arange(s, dtype=np.int64)
            o = empty((b, s, hq, dv), F32)
            lse = empty((b, s, hq), F32)
            call("braid_k_attention_block", F32, q, k, v, pos, pos, o, lse,
                 attn(b, s, s, hq, hkv, d, dv, int(causal), scale, theta or 0.0))
            o0 = empty((b, s, hq, dv), F32)
            call("braid_k_attention", F32, q, k, v, o0,
                 attn(b, s, s, hq, hkv, d, dv, int(causal), scale, theta or 0.0))
            self.assertLessEqual(rel(o, o0), 1e-6)

    def test_wrong_positions_fail(self):
        # The check can fail: zigzag key blocks passed with natural positions.
        b, s, hq, hkv, d, dv, causal, theta = 1, 16, 4, 2, 8, 8, True, 1e4
        scale = 1.0 / math.sqrt(d)
        q, k = self.randn(b, s, hq, d), self.randn(b, s, hkv, d)
        v, do = self.randn(b, s, hkv, dv), self.randn(b, s, hq, dv)
        gpos = np.arange(s, dtype=np.int64)
        ro, _, rq, rk, _ = attention(*(a.astype(np.float64) for a in (q, k, v)), gpos, gpos,
                                     causal, scale, theta, do=do.astype(np.float64))
        pr, wrong = rank_positions(s, 2, "zigzag"), rank_positions(s, 2, "natural")
        qr, kr, vr, dor = ([np.ascontiguousarray(a[:, p]) for p in pr] for a in (q, k, v, do))
        shape = (b, hq, hkv, d, dv)
        res = ring_forward(F32, qr, kr, vr, pr, wrong, shape, causal, scale, theta)
        gq, gk, _ = ring_backward(F32, qr, kr, vr, dor, res, pr, wrong, shape, causal, scale,
                                  theta)
        got_o = np.concatenate([o for o, _ in res], axis=1)
        ref_o = np.concatenate([ro[:, p] for p in pr], axis=1)
        got_q = np.concatenate(gq, axis=1)
        ref_q = np.concatenate([rq[:, p] for p in pr], axis=1)
        got_k = np.concatenate(gk, axis=1)
        ref_k = np.concatenate([rk[:, p] for p in pr], axis=1)
        for name, got, ref in (("out", got_o, ref_o), ("dq", got_q, ref_q), ("dk", got_k, ref_k)):
            err = rel(got, ref)
            record((f"negative control {name}", "f32"), err)
            self.assertGreater(err, 0.05, f"{name}: wrong key positions not noticed")


class Merge(Case):
    def test_edge_cases(self):
        rows, dv = 4, 5
        bo = self.randn(rows, dv)
        # both -inf: (0, -inf), even over a garbage out
        o = np.full((rows, dv), np.nan, np.float32)
        lse = np.full(rows, -np.inf, np.float32)
        call("braid_k_attention_merge", o, lse, np.zeros((rows, dv), np.float32),
             np.full(rows, -np.inf, np.float32), rows, dv)
        np.testing.assert_array_equal(o, 0)
        self.assertTrue(np.isneginf(lse).all())
        # running -inf: the block's, exactly
        o = np.zeros((rows, dv), np.float32)
        lse = np.full(rows, -np.inf, np.float32)
        bl = self.randn(rows)
        call("braid_k_attention_merge", o, lse, bo, bl, rows, dv)
        np.testing.assert_array_equal(o, bo)
        np.testing.assert_array_equal(lse, bl)
        # block -inf: unchanged, exactly
        o2, l2 = o.copy(), lse.copy()
        call("braid_k_attention_merge", o2, l2, np.zeros((rows, dv), np.float32),
             np.full(rows, -np.inf, np.float32), rows, dv)
        np.testing.assert_array_equal(o2, o)
        np.testing.assert_array_equal(l2, lse)

    def test_formula(self):
        rows, dv = 50, 7
        o, bo = self.randn(rows, dv), self.randn(rows, dv)
        la, lb = self.randn(rows, scale=3.0), self.randn(rows, scale=3.0)
        la[:3] = [80.0, -80.0, 0.0]   # far apart: one weight underflows
        lb[:3] = [-80.0, 80.0, 0.0]
        m = np.maximum(la, lb).astype(np.float64)
        ref_l = m + np.log(np.exp(la - m) + np.exp(lb - m))
        ref_o = (np.exp(la - ref_l)[:, None] * o + np.exp(lb - ref_l)[:, None] * bo)
        got_o, got_l = o.copy(), la.copy()
        call("braid_k_attention_merge", got_o, got_l, bo, lb, rows, dv)
        record(("merge out", "f32"), rel(got_o, ref_o))
        record(("merge lse", "f32"), rel(got_l, ref_l))
        self.assertLessEqual(rel(got_o, ref_o), 1e-6)
        self.assertLessEqual(rel(got_l, ref_l), 1e-6)


class Delta(Case):
    def test_delta(self):
        rows, dv = 33, 12
        o = self.randn(rows, dv)
        for dt in DTYPES:
            dos, dov = store(self.randn(rows, dv), dt)
            got = kernel_harness.poisoned(rows, F32)
            call("braid_k_attention_delta", dt, dos, o, got, rows, dv)
            ref = np.sum(dov.astype(np.float64) * o, axis=1)
            record(("delta", DTN[dt]), rel(got, ref))
            self.assertLessEqual(rel(got, ref), 1e-6, DTN[dt])


class Backward(Case):
    def test_ring_backward(self):
        for b, s, hq, hkv, d, dv, causal, theta in CASES:
            scale = 1.0 / math.sqrt(d)
            q32, k32 = self.randn(b, s, hq, d), self.randn(b, s, hkv, d)
            v32, do32 = self.randn(b, s, hkv, dv), self.randn(b, s, hq, dv)
            for dt in DTYPES:
                (qs, q), (ks, k), (vs, v), (dos, do) = (store(a, dt)
                                                        for a in (q32, k32, v32, do32))
                gpos = np.arange(s, dtype=np.int64)
                _, _, rq, rk, rv = attention(*(a.astype(np.float64) for a in (q, k, v)), gpos,
                                             gpos, causal, scale, theta,
                                             do=do.astype(np.float64))
                for cp in CPS:
                    for layout in LAYOUTS:
                        pr = rank_positions(s, cp, layout)
                        qr, kr, vr, dor = ([np.ascontiguousarray(a[:, p]) for p in pr]
                                           for a in (qs, ks, vs, dos))
                        shape = (b, hq, hkv, d, dv)
                        fwd = ring_forward(dt, qr, kr, vr, pr, pr, shape, causal, scale, theta)
                        gq, gk, gv = ring_backward(dt, qr, kr, vr, dor, fwd, pr, pr, shape,
                                                   causal, scale, theta)
                        what = f" {DTN[dt]} b={b} s={s} hq={hq} hkv={hkv} d={d} dv={dv} " \
                               f"causal={causal} theta={theta} cp={cp} {layout}"
                        for name, gots, ref in (("dq", gq, rq), ("dk", gk, rk), ("dv", gv, rv)):
                            got = np.concatenate(gots, axis=1)
                            want = np.concatenate([ref[:, p] for p in pr], axis=1)
                            err = rel(got, want)
                            record((f"block_grad {name}", DTN[dt]), err)
                            self.assertLessEqual(err, 1e-5, f"{name}{what}: rel {err:.3g}")

    def test_blind_rows_and_accumulation(self):
        b, s, hq, hkv, d, dv = 1, 8, 2, 1, 4, 4
        q, k, v, do = (self.randn(b, s, h, e) for h, e in ((hq, d), (hkv, d), (hkv, dv),
                                                           (hq, dv)))
        pos = np.arange(s, dtype=np.int64)
        lse = np.full((b, s, hq), -np.inf, np.float32)
        delta = self.randn(b, s, hq)
        for causal in (0, 1):
            dq, dk, dv_ = (np.zeros(a.shape, np.float32) for a in (q, k, v))
            call("braid_k_attention_block_grad", F32, q, k, v, do, pos, pos, lse, delta, dq, dk,
                 dv_, attn(b, s, s, hq, hkv, d, dv, causal, 0.5, 1e4))
            for a in (dq, dk, dv_):
                np.testing.assert_array_equal(a, 0)
        # Adds into the accumulators: twice = 2x (from a non-zero start).
        gpos = pos
        out, l = attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64),
                           gpos, gpos, True, 0.5, 1e4)
        lse = l.astype(np.float32)
        o32 = out.astype(np.float32)
        delta = np.empty((b, s, hq), np.float32)
        call("braid_k_attention_delta", F32, do, o32, delta, b * s * hq, dv)
        one = [np.zeros(a.shape, np.float32) for a in (q, k, v)]
        call("braid_k_attention_block_grad", F32, q, k, v, do, pos, pos, lse, delta, *one,
             attn(b, s, s, hq, hkv, d, dv, 1, 0.5, 1e4))
        base = [np.full(a.shape, 1.5, np.float32) for a in (q, k, v)]
        for _ in range(2):
            call("braid_k_attention_block_grad", F32, q, k, v, do, pos, pos, lse, delta, *base,
                 attn(b, s, s, hq, hkv, d, dv, 1, 0.5, 1e4))
        for got, g1 in zip(base, one):
            self.assertLessEqual(rel(got - 1.5, 2 * g1), 1e-6)


ABORT_SCRIPT = r"""
import ctypes, sys
import numpy as np
lib = ctypes.CDLL(sys.argv[1])
P, I, I4, D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_double
which = sys.argv[2]
a = lambda x: x.ctypes.data
lib.braid_k_sequence_positions.argtypes = [P, P, I, I, I, I]
class Params(ctypes.Structure):  # braid_attention_params
    _fields_ = [(n, I) for n in ("batch", "seq", "seq_kv", "heads", "kv_heads", "head_dim",
                                 "v_head_dim")] + [("causal", I4), ("scale", D),
                                                   ("rope_theta", D), ("q_offset", I)]
AP = ctypes.POINTER(Params)
lib.braid_k_attention_block.argtypes = [P, I4, P, P, P, P, P, P, P, AP]
lib.braid_k_attention_block_grad.argtypes = [P, I4] + [P] * 11 + [AP]
pos = np.zeros(64, np.int64)
buf = np.zeros(1 << 16, np.float32)
def block(heads, kv_heads, d, dv, theta, grad=False, q_offset=0):
    p = ctypes.byref(Params(1, 2, 2, heads, kv_heads, d, dv, 1, 0.5, theta, q_offset))
    if grad:
        lib.braid_k_attention_block_grad(None, 0, *([a(buf)] * 4), a(pos), a(pos),
                                         *([a(buf)] * 5), p)
    else:
        lib.braid_k_attention_block(None, 0, a(buf), a(buf), a(buf), a(pos), a(pos), a(buf),
                                    a(buf), p)
if which == "zigzag_seq":
    lib.braid_k_sequence_positions(None, a(pos), 4, 0, 12, 4)
elif which == "past_end":
    lib.braid_k_sequence_positions(None, a(pos), 8, 10, 16, 2)
elif which == "negative_start":
    lib.braid_k_sequence_positions(None, a(pos), 2, -1, 16, 0)
elif which == "negative_ranks":
    lib.braid_k_sequence_positions(None, a(pos), 2, 0, 16, -1)
elif which == "heads":
    block(3, 2, 4, 4, 0.0)
elif which == "odd_rope":
    block(2, 1, 5, 4, 1e4)
elif which == "head_dim":
    block(2, 1, 4, 2048, 0.0)
elif which == "grad_heads":
    block(4, 3, 4, 4, 0.0, grad=True)
elif which == "grad_odd_rope":
    block(2, 2, 3, 4, 1e4, grad=True)
elif which == "offset":
    block(2, 1, 4, 4, 0.0, q_offset=4)
elif which == "grad_offset":
    block(2, 1, 4, 4, 0.0, grad=True, q_offset=4)
print("returned")
"""


class Aborts(Case):
    def test_arguments(self):
        self.check_aborts(ABORT_SCRIPT, (
            ("zigzag_seq", "braid: sequence_positions: zigzag over 4 ranks needs seq a "
                           "multiple of 8, got 12"),
            ("past_end", "braid: sequence_positions: rows 10 + 8 outside the sequence of 16"),
            ("negative_start", "braid: sequence_positions: rows -1 + 2 outside"),
            ("negative_ranks", "braid: sequence_positions: negative zigzag rank count -1"),
            ("heads", "braid: attention_block: 3 query heads are not a multiple of 2 kv heads"),
            ("odd_rope", "braid: attention_block: rotary embedding needs an even head dim, "
                         "got 5"),
            ("head_dim", "braid: attention_block: head dims 4 / 2048 exceed the supported 1024"),
            ("grad_heads", "braid: attention_block_grad: 4 query heads are not a multiple of 3"),
            ("grad_odd_rope", "braid: attention_block_grad: rotary embedding needs an even "
                              "head dim, got 3"),
            # The rows' positions are the arrays: a query offset is refused.
            ("offset", "braid: attention_block: query offset 4: the key-block kernels take "
                       "positions instead"),
            ("grad_offset", "braid: attention_block_grad: query offset 4: the key-block "
                            "kernels take positions instead"),
        ))


if __name__ == "__main__":
    main("cpu-attention-block.py", width=28)
