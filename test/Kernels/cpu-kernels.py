# The CPU kernels of runtime/src/cpu against the numpy reference (braid_ref.ops),
# compiled here with the host compiler so the test does not depend on the CMake
# wiring of the runtime library.
#
# RUN: %ctypes_cxx -std=c++17 -O2 -fPIC -shared -I%braid_src/runtime/include %braid_src/runtime/src/cpu/kernels.cpp %braid_src/runtime/src/cpu/matmul.cpp %braid_src/runtime/src/cpu/few_rows_linear.cpp %braid_src/runtime/src/cpu/thread_pool.cpp %braid_src/runtime/src/cpu/blas.cpp %braid_src/runtime/src/cpu/attention.cpp %braid_src/runtime/src/cpu/attention_gemm.cpp %braid_src/runtime/src/cpu/scratch.cpp %braid_src/runtime/src/cpu/norms.cpp %braid_src/runtime/src/cpu/softmax.cpp %braid_src/runtime/src/cpu/loss.cpp %braid_src/runtime/src/cpu/mamba.cpp %braid_src/runtime/src/cpu/moe.cpp %braid_src/runtime/src/cpu/grad_moe.cpp %S/Inputs/fused.cpp -o %t.so
# RUN: %ctypes_python %s %t.so
#
# Error measure: rel(a, b) = max|a - b| / max(max|b|, tiny) per tensor, b the
# reference (float64 arithmetic on the same stored inputs, rounded to f32).
#
# Bounds:
# - f32 storage, 1e-5: the kernels accumulate in f32 (double for the norm,
#   softmax and loss sums) in an order other than numpy's; the rounding error
#   of a sum of n products grows like n * 2^-24 * sum|terms| in the worst case
#   and like sqrt(n) * 2^-24 typically. With n <= ~260 and random N(0, 1)
#   data that is ~1e-6 relative to the largest output, well under 1e-5. The
#   recurrences (selective scan over S <= 33 steps, online softmax) compound
#   a few ulps per step, again < 1e-5.
# - bf16 storage, 2^-8: the reference is evaluated on the bf16-rounded inputs
#   (exact in f32), so the only differences are the final RNE store to bf16
#   (<= 2^-9 relative to the element, hence to the tensor max) plus the f32
#   accumulation above (< 1e-5): < 2^-9 + 1e-5 < 2^-8.
# - f16 storage, 2^-10: likewise with the f16 store (<= 2^-11) + 1e-5.
# - Pure data movement (embedding without positions, transpose, dispatch),
#   indices of the router, and fused-vs-unfused pointwise math: bit-exact.

import ctypes
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))

import numpy as np  # noqa: E402

from braid_ref import ops, vjp  # noqa: E402
from kernel_harness import (BF16, DTYPES, F16, F32, I32, I64, LIB, MAX_ERR, P, I,  # noqa: E402
                            attn, call, declare, empty, from_bf16, main, rel, scan, store,
                            to_bf16, values)
import kernel_harness  # noqa: E402

RNG = np.random.default_rng(20240611)

ACTS = {"silu": 0, "gelu": 1, "gelu_tanh": 2, "sigmoid": 3, "relu": 4, "exp": 5, "neg": 6}

declare(["braid_k_embedding", "braid_k_linear", "braid_k_batch_matmul", "braid_k_attention",
         "braid_k_rms_norm", "braid_k_layer_norm", "braid_k_softmax", "braid_k_softmax_grad",
         "braid_k_unary", "braid_k_binary",
         "braid_k_glu", "braid_k_transpose", "braid_k_cross_entropy", "braid_k_conv1d",
         "braid_k_selective_scan", "braid_k_router", "braid_k_dispatch", "braid_k_combine",
         "braid_k_dispatch_grad", "braid_k_combine_grad"],
        {"braid_test_fused_example": [P, P, P, I],
         "braid_test_fused_act": [ctypes.c_int, P, P, I],
         "braid_test_to_bf16": [P, P, I],
         "braid_test_from_bf16": [P, P, I],
         "braid_test_to_f16": [P, P, I],
         "braid_test_from_f16": [P, P, I]})


class Case(kernel_harness.Case):
    rng = RNG


# --- conversions and fused code ----------------------------------------------

class Conversions(Case):
    def test_bf16_round_trip(self):
        specials = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan,
                             3.4028235e38, -3.4028235e38, 1e-45, 1.1754942e-38,
                             1.00390625, 1.01171875,   # exact ties: to even (down, up)
                             1.0039063, 1.0039062], dtype=np.float32)
        x = np.concatenate([specials, self.randn(4000, scale=100.0),
                            RNG.integers(0, 2**32, 4000, dtype=np.uint64)
                            .astype(np.uint32).view(np.float32)])
        got = np.zeros(x.size, dtype=np.uint16)
        LIB.braid_test_to_bf16(x.ctypes.data, got.ctypes.data, x.size)
        expect = to_bf16(x)
        nan = np.isnan(x)
        np.testing.assert_array_equal(got[~nan], expect[~nan])
        self.assertTrue(np.isnan(from_bf16(got[nan])).all())
        np.testing.assert_array_equal(np.signbit(from_bf16(got[nan])), np.signbit(x[nan]))
        allbits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
        back = np.zeros(65536, dtype=np.float32)
        LIB.braid_test_from_bf16(allbits.ctypes.data, back.ctypes.data, 65536)
        np.testing.assert_array_equal(back.view(np.uint32), from_bf16(allbits).view(np.uint32))

    def test_f16_round_trip(self):
        allbits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
        back = np.zeros(65536, dtype=np.float32)
        LIB.braid_test_from_f16(allbits.ctypes.data, back.ctypes.data, 65536)
        ref = allbits.view(np.float16).astype(np.float32)
        nan = np.isnan(ref)
        np.testing.assert_array_equal(back[~nan].view(np.uint32), ref[~nan].view(np.uint32))
        self.assertTrue(np.isnan(back[nan]).all())
        # Every f16 value, every midpoint between neighbours (ties to even), and
        # random floats over the whole range including subnormals and overflow.
        f = np.sort(ref[~nan & np.isfinite(ref) & (ref >= 0)])
        mids = ((f[1:].astype(np.float64) + f[:-1]) / 2).astype(np.float32)
        x = np.concatenate([f, -f, mids, -mids, np.float32([65504, 65519.99, 65520, 1e6, np.inf,
                                                            -np.inf, np.nan]),
                            self.randn(3000, scale=1e-5), self.randn(3000, scale=1e3)])
        got = np.zeros(x.size, dtype=np.uint16)
        LIB.braid_test_to_f16(x.ctypes.data, got.ctypes.data, x.size)
        with np.errstate(over="ignore"):
            expect = x.astype(np.float16).view(np.uint16)
        nan = np.isnan(x)
        np.testing.assert_array_equal(got[~nan], expect[~nan])
        self.assertTrue(np.isnan(got[nan].view(np.float16)).all())

    def test_fused_matches_unfused_bitwise(self):
        x = np.concatenate([self.randn(1000, scale=4.0),
                            np.float32([0, -0.0, 30, -30, 90, -90, 1e4, -1e4])])
        for name, act in ACTS.items():
            fused = np.zeros_like(x)
            LIB.braid_test_fused_act(act, x.ctypes.data, fused.ctypes.data, x.size)
            unfused = np.zeros_like(x)
            call("braid_k_unary", F32, act, x, unfused, x.size)
            np.testing.assert_array_equal(fused.view(np.uint32), unfused.view(np.uint32),
                                          err_msg=name)
        # softplus: the fused helper (code 7) against the reference, large |x| included.
        sp = np.zeros_like(x)
        LIB.braid_test_fused_act(7, x.ctypes.data, sp.ctypes.data, x.size)
        self.assertLessEqual(rel(sp, ops.softplus(x)), 1e-6)
        self.assertTrue(np.isfinite(sp).all())

    def test_fused_example(self):
        x = self.randn(37)
        yb, y = store(self.randn(37), BF16)
        z = np.zeros(37, dtype=np.float32)
        LIB.braid_test_fused_example(x.ctypes.data, yb.ctypes.data, z.ctypes.data, 37)
        self.assertLessEqual(rel(z, ops.silu(x).astype(np.float64) * y), 1e-6)


# --- elementwise -------------------------------------------------------------

class Elementwise(Case):
    def test_unary(self):
        for dt in DTYPES:
            for n in (1, 17, 1000):
                x32 = self.randn(n, scale=3.0)
                x32[: min(n, 4)] = np.float32([30, -30, 0, -0.5])[: min(n, 4)]
                if dt != F16:  # f16 overflows exp(30)
                    x32[: min(n, 2)] = np.float32([80, -80])[: min(n, 2)]
                xs, xv = store(x32, dt)
                for name, act in ACTS.items():
                    if dt == F16 and name == "exp":
                        xs, xv = store(np.clip(x32, -8, 8), dt)
                    y = empty(n, dt)
                    call("braid_k_unary", dt, act, xs, y, n)
                    ref = {"exp": ops.exp, "neg": ops.neg}.get(
                        name, lambda v, nm=name: ops.activation(nm, v))(xv)
                    self.close(f"unary.{name}", dt, y, ref, f" n={n}")

    def test_binary_and_glu(self):
        for dt in DTYPES:
            for n in (1, 3, 65, 777):
                a_s, a = store(self.randn(n), dt)
                b_s, b = store(self.randn(n), dt)
                for op, fn in ((0, ops.add), (1, ops.mul)):
                    y = empty(n, dt)
                    call("braid_k_binary", dt, op, a_s, b_s, y, n)
                    self.close(f"binary.{op}", dt, y, fn(a, b))
                for name in ("silu", "gelu", "gelu_tanh", "sigmoid", "relu"):
                    y = empty(n, dt)
                    call("braid_k_glu", dt, ACTS[name], a_s, b_s, y, n)
                    self.close(f"glu.{name}", dt, y, ops.glu(name, a, b))

    def test_embedding(self):
        for dt in DTYPES:
            for index_dt in (I32, I64):
                for bshape, vocab, hidden, with_pos in (((2, 16), 97, 32, True), ((1,), 1, 1, True),
                                                        ((3, 5), 97, 17, False), ((7,), 5, 3, True)):
                    s = bshape[-1]
                    tok = RNG.integers(0, vocab, bshape).astype(
                        np.int32 if index_dt == I32 else np.int64)
                    ts, tv = store(self.randn(vocab, hidden), dt)
                    ps, pv = store(self.randn(s + 2, hidden), dt)  # P > S is allowed
                    y = empty(bshape + (hidden,), dt)
                    call("braid_k_embedding", dt, index_dt, tok, ts, ps if with_pos else None, y,
                         tok.size, s, vocab, hidden)
                    ref = ops.embedding(tok, tv, pv if with_pos else None)
                    if with_pos:
                        self.close("embedding", dt, y, ref)
                    else:  # a copy: bit-exact
                        np.testing.assert_array_equal(values(y, dt), ref)

    def test_transpose(self):
        shapes = [(5,), (1, 7), (3, 17), (2, 1, 4), (2, 3, 4, 5), (3, 1, 2, 1, 4), (65, 3)]
        for shape in shapes:
            for _ in range(4):
                perm = RNG.permutation(len(shape))
                for dt, npdt in ((F32, np.float32), (BF16, np.uint16), (I32, np.int32),
                                 (I64, np.int64)):
                    x = RNG.integers(-1000, 1000, shape).astype(npdt)
                    y = np.zeros(tuple(shape[p] for p in perm), dtype=npdt)
                    call("braid_k_transpose", dt, x, y, len(shape),
                         np.array(shape, dtype=np.int64), np.array(perm, dtype=np.int64))
                    np.testing.assert_array_equal(y, ops.transpose(x, perm),
                                                  err_msg=f"{shape} {perm}")


# --- matmul --------------------------------------------------------------------

class Matmul(Case):
    def test_linear(self):
        # Block sizes are 16 x 128 x 64 (M x N x K): cover 1, below, at and past.
        shapes = [(1, 1, 1), (3, 17, 65), (17, 65, 3), (16, 64, 128), (33, 130, 257),
                  (1, 200, 1), (5, 1, 129)]
        for dt in DTYPES:
            for rows, k, n in shapes:
                for tw in (0, 1):
                    for with_bias in (False, True):
                        xs, xv = store(self.randn(rows, k), dt)
                        ws, wv = store(self.randn(*((n, k) if tw else (k, n))), dt)
                        bs, bv = store(self.randn(n), dt)
                        y = empty((rows, n), dt)
                        call("braid_k_linear", dt, xs, ws, bs if with_bias else None, y,
                             rows, k, n, tw)
                        ref = ops.linear(xv, wv, bv if with_bias else None, bool(tw))
                        self.close("linear", dt, y, ref, f" {rows}x{k}x{n} tw={tw}")

    def test_batch_matmul(self):
        for dt in DTYPES:
            for batch, m, k, n in ((1, 1, 1, 1), (3, 17, 65, 5), (2, 1, 130, 129), (4, 20, 3, 1)):
                for ta in (0, 1):
                    for tb in (0, 1):
                        a_s, a = store(self.randn(batch, *((k, m) if ta else (m, k))), dt)
                        b_s, b = store(self.randn(batch, *((n, k) if tb else (k, n))), dt)
                        c = empty((batch, m, n), dt)
                        call("braid_k_batch_matmul", dt, a_s, b_s, c, batch, m, k, n, ta, tb)
                        self.close("batch_matmul", dt, c, ops.batch_matmul(a, b, bool(ta), bool(tb)),
                                   f" {batch}x{m}x{k}x{n} ta={ta} tb={tb}")


# --- attention -------------------------------------------------------------------

class Attention(Case):
    def run_case(self, dt, b, s, skv, hq, hkv, d, dv, causal, scale=None, theta=None,
                 qscale=1.0):
        qs, q = store(self.randn(b, s, hq, d, scale=qscale), dt)
        ks, k = store(self.randn(b, skv, hkv, d, scale=qscale), dt)
        vs, v = store(self.randn(b, skv, hkv, dv), dt)
        o = empty((b, s, hq, dv), dt)
        call("braid_k_attention", dt, qs, ks, vs, o,
             attn(b, s, skv, hq, hkv, d, dv, int(causal),
                  1.0 / math.sqrt(d) if scale is None else scale,
                  0.0 if theta is None else theta))
        ref = ops.attention(q, k, v, causal, scale, theta)
        self.close("attention", dt, o, ref,
                   f" b={b} s={s} skv={skv} hq={hq} hkv={hkv} d={d} dv={dv} causal={causal} "
                   f"theta={theta}")

    def test_shapes(self):
        for dt in DTYPES:
            self.run_case(dt, 1, 1, 1, 1, 1, 1, 1, False)
            self.run_case(dt, 2, 16, 16, 4, 4, 8, 8, False)             # MHA
            self.run_case(dt, 2, 17, 17, 4, 2, 8, 8, True, theta=5e5)   # GQA, causal, RoPE
            self.run_case(dt, 1, 9, 23, 6, 1, 6, 10, False, theta=1e4)  # MQA, Skv != S, Dv != D
            self.run_case(dt, 1, 3, 65, 2, 1, 16, 3, False, scale=0.7)  # custom scale
            self.run_case(dt, 1, 33, 33, 3, 3, 4, 5, True)              # causal, no RoPE
            self.run_case(dt, 1, 1, 1, 2, 2, 2, 1, True, theta=10.0)
            self.run_case(dt, 1, 8, 8, 2, 1, 8, 8, True, qscale=4.0)     # peaked softmax
            self.run_case(dt, 1, 65, 65, 2, 1, 128, 128, True, theta=1e4)  # 64-row blocks + 1
            self.run_case(dt, 1, 17, 17, 1, 1, 1024, 1024, True, theta=1e4)  # max head dim, 8-row blocks

    def test_rope_far_positions(self):
        # Angles p * f_0 = p radians: exercise a long sequence with a few heads.
        self.run_case(F32, 1, 300, 300, 1, 1, 4, 2, True, theta=1e4)


class Norms(Case):
    def test_rms_and_layer_norm(self):
        for dt in DTYPES:
            for rows, hidden, eps in ((1, 1, 1e-5), (5, 17, 1e-6), (3, 65, 1e-5), (2, 300, 0.1)):
                xs, x = store(self.randn(rows, hidden, scale=3.0) + 0.5, dt)
                gs, g = store(self.randn(hidden), dt)
                bs, bb = store(self.randn(hidden), dt)
                y = empty((rows, hidden), dt)
                call("braid_k_rms_norm", dt, xs, gs, y, rows, hidden, eps)
                self.close("rms_norm", dt, y, ops.rms_norm(x, g, eps))
                y = empty((rows, hidden), dt)
                call("braid_k_layer_norm", dt, xs, gs, bs, y, rows, hidden, eps)
                self.close("layer_norm", dt, y, ops.layer_norm(x, g, bb, eps))


class Softmax(Case):
    def test_softmax(self):
        for dt in DTYPES:
            # One column; odd widths; rows far from 0 (the max is subtracted
            # before exp: 1000 would overflow exp otherwise); masked entries.
            for rows, n, offset, masked in ((1, 1, 0.0, False), (5, 17, 0.0, False),
                                            (3, 65, 0.0, True), (2, 300, 0.0, False),
                                            (4, 33, 1000.0, False), (4, 33, -1000.0, True)):
                if dt == F16 and abs(offset) > 100:
                    continue  # f16 spacing at 1000 is 0.5: inputs too coarse to mean much
                x = self.randn(rows, n, scale=3.0) + offset
                if masked:
                    x[:, 1::3] = -np.inf  # column 0 stays finite: no row is all -inf
                xs, xr = store(x, dt)
                y = empty((rows, n), dt)
                call("braid_k_softmax", dt, xs, y, rows, n)
                self.close("softmax", dt, y, ops.softmax(xr))
                got = values(y, dt)
                if masked:
                    self.assertTrue((got[:, 1::3] == 0).all(), "masked entries must be 0")
                np.testing.assert_allclose(got.astype(np.float64).sum(axis=-1), 1.0,
                                           rtol=0, atol={F32: 1e-5, BF16: 2**-8,
                                                         F16: 2**-10}[dt])

    def test_softmax_grad(self):
        for dt in DTYPES:
            for rows, n in ((1, 1), (5, 17), (3, 65), (2, 300)):
                xs, xr = store(self.randn(rows, n, scale=2.0), dt)
                y = empty((rows, n), dt)
                call("braid_k_softmax", dt, xs, y, rows, n)
                ds, dy = store(self.randn(rows, n), dt)
                dx = empty((rows, n), dt)
                call("braid_k_softmax_grad", dt, y, ds, dx, rows, n)
                # The reference on the stored y (what the kernel reads), in float64.
                yf, dyf = values(y, dt).astype(np.float64), dy.astype(np.float64)
                ref = yf * (dyf - np.sum(dyf * yf, axis=-1, keepdims=True))
                self.close("softmax_grad", dt, dx, ref.astype(np.float32))
                # And the float64 VJP from x itself agrees (f32 storage: y's rounding only).
                if dt == F32:
                    self.assertLess(rel(values(dx, dt), vjp.softmax_vjp(dyf, xr)), 1e-5)


class Loss(Case):
    def test_cross_entropy(self):
        for dt in DTYPES:
            for index_dt in (I32, I64):
                for rows, vocab, offset in ((1, 1, 0.0), (32, 97, 0.0), (5, 97, 1000.0),
                                            (3, 300, -50.0)):
                    if dt == F16 and abs(offset) > 100:
                        continue  # f16 spacing at 1000 is 0.5
                    xs, x = store(self.randn(rows, vocab, scale=2.0) + offset, dt)
                    lab = RNG.integers(0, vocab, rows).astype(
                        np.int32 if index_dt == I32 else np.int64)
                    loss = np.zeros((), dtype=np.float32)
                    call("braid_k_cross_entropy", dt, index_dt, xs, lab, loss, rows, vocab)
                    ref = ops.cross_entropy(x.astype(np.float64), lab)
                    # The loss is stored as f32 whatever dt: the f32 bound applies.
                    err = rel(loss, ref)
                    key = ("cross_entropy", {F32: "f32", BF16: "bf16", F16: "f16"}[dt])
                    MAX_ERR[key] = max(MAX_ERR.get(key, 0.0), err)
                    if vocab == 1:
                        self.assertEqual(float(loss), 0.0)
                    else:
                        self.assertLessEqual(err, 1e-5, f"cross_entropy {rows}x{vocab}")


# --- Mamba -------------------------------------------------------------------------

class Mamba(Case):
    def test_conv1d(self):
        for dt in DTYPES:
            for b, s, c, k, with_bias in ((1, 1, 1, 1, True), (2, 16, 64, 4, True),
                                          (1, 3, 300, 4, False), (2, 5, 3, 7, True)):
                xs, x = store(self.randn(b, s, c), dt)
                ws, w = store(self.randn(c, k), dt)
                bs, bb = store(self.randn(c), dt)
                y = empty((b, s, c), dt)
                call("braid_k_conv1d", dt, xs, ws, bs if with_bias else None, y, b, s, c, k)
                self.close("conv1d", dt, y, ops.conv1d(x, w, bb if with_bias else None))

    def test_selective_scan(self):
        for dt in DTYPES:
            for b, s, di, n, sp in ((1, 1, 1, 1, True), (2, 16, 8, 16, True), (1, 33, 5, 3, False),
                                    (2, 7, 17, 4, True)):
                xs, x = store(self.randn(b, s, di), dt)
                if sp:
                    dl = self.randn(b, s, di, scale=2.0)
                    dl.flat[:: max(1, dl.size // 3)] = 40.0  # softplus(40) = 40: no overflow
                else:
                    dl = np.abs(self.randn(b, s, di)) * 0.5
                ds, dlt = store(dl, dt)
                As, A = store(-np.exp(self.randn(di, n, scale=0.5)), dt)
                Bs, Bm = store(self.randn(b, s, n), dt)
                Cs, Cm = store(self.randn(b, s, n), dt)
                Ds, Dp = store(self.randn(di), dt)
                y = empty((b, s, di), dt)
                call("braid_k_selective_scan", dt, xs, ds, As, Bs, Cs, Ds, y,
                     scan(b, s, di, n, int(sp)))
                self.close("selective_scan", dt, y,
                           ops.selective_scan(x, dlt, A, Bm, Cm, Dp, bool(sp)),
                           f" {b}x{s}x{di}x{n} softplus={sp}")


# --- mixture of experts ---------------------------------------------------------

class MoE(Case):
    def router(self, logits32, k, normalize, dt):
        ls, lv = store(logits32, dt)
        t, e = logits32.shape
        w = empty((t, k), dt)
        idx = np.zeros((t, k), dtype=np.int32)
        call("braid_k_router", dt, ls, w, idx, t, e, k, int(normalize))
        rw, ri = ops.router(lv, k, normalize)
        np.testing.assert_array_equal(idx, ri)
        self.close("router", dt, w, rw, f" {t}x{e} k={k}")
        return idx

    def test_router(self):
        for dt in DTYPES:
            for t, e in ((1, 1), (32, 8), (5, 3), (17, 65)):
                for k in sorted({1, min(2, e), e}):
                    for normalize in (False, True):
                        self.router(self.randn(t, e), k, normalize, dt)

    def test_router_ties(self):
        rows = np.float32([[0, 0, 0, 0], [1, 2, 2, 0], [3, 1, 3, 3], [0, 5, 0, 5],
                           [-1, -1, 2, -1], [7, 7, 7, 7]])
        expect3 = [[0, 1, 2], [1, 2, 0], [0, 2, 3], [1, 3, 0], [2, 0, 1], [0, 1, 2]]
        for dt in DTYPES:
            idx = self.router(rows, 3, True, dt)
            np.testing.assert_array_equal(idx, expect3)

    def test_dispatch_combine(self):
        # (tokens, hidden, k, experts, capacity per group, groups)
        for dt in DTYPES:
            for t, h, k, e, cap, g in ((1, 1, 1, 1, 1, 1), (32, 64, 2, 8, 10, 1),
                                       (32, 17, 2, 8, 3, 1), (9, 300, 3, 4, 2, 1),
                                       (6, 5, 2, 3, 12, 1), (32, 16, 2, 4, 5, 2),
                                       (32, 9, 2, 8, 2, 4), (12, 7, 3, 4, 1, 3)):
                idx = np.stack([RNG.permutation(e)[:k] for _ in range(t)]).astype(np.int32)
                idx[: t // 2, 0] = 0  # crowd expert 0: drops when cap < t
                for r in range(t // 2):
                    if k > 1 and idx[r, 1] == 0:
                        idx[r, 1] = 1 if e > 1 else 0
                what = f" t={t} k={k} e={e} cap={cap} groups={g}"
                xs, x = store(self.randn(t, h), dt)
                d = empty((e, g * cap, h), dt)
                call("braid_k_dispatch", dt, xs, idx, d, t, h, k, e, cap, g)
                np.testing.assert_array_equal(values(d, dt), ops.dispatch(x, idx, e, cap, g))
                eos, eo = store(self.randn(e, g * cap, h), dt)
                ws, w = store(np.abs(self.randn(t, k)), dt)
                y = empty((t, h), dt)
                call("braid_k_combine", dt, eos, ws, idx, y, t, h, k, e, cap, g)
                self.close("combine", dt, y, ops.combine(eo, w, idx, g), what)
                dys, dy = store(self.randn(t, h), dt)
                dx = empty((t, h), dt)
                call("braid_k_dispatch_grad", dt, eos, idx, dx, t, h, k, e, cap, g)
                self.close("dispatch_grad", dt, dx, vjp.dispatch_vjp(eo, x, idx, e, cap, g),
                           what)
                deo, dw = empty((e, g * cap, h), dt), empty((t, k), dt)
                call("braid_k_combine_grad", dt, eos, ws, idx, dys, deo, dw, t, h, k, e, cap, g)
                rdeo, rdw = vjp.combine_vjp(dy, eo, w, idx, g)
                self.close("combine_grad.dexpert", dt, deo, rdeo, what)
                self.close("combine_grad.dweights", dt, dw, rdw, what)
            # Drops actually happened in the crowded cases.
            self.assertTrue((ops.assign_slots(idx, e, cap, g) < 0).any() or cap >= t)

    def test_dispatch_groups(self):
        # Capacity is per group: the same tokens in one call of 2 groups and in
        # two calls of one group each (two data shards) fill the same slots.
        t, h, k, e, cap = 16, 3, 2, 4, 2
        idx = np.stack([RNG.permutation(e)[:k] for _ in range(t)]).astype(np.int32)
        idx[:, 0] = 0  # every first choice to expert 0: drops in both groups
        xs, x = store(self.randn(t, h), F32)
        whole = empty((e, 2 * cap, h), F32)
        call("braid_k_dispatch", F32, xs, idx, whole, t, h, k, e, cap, 2)
        for half in range(2):
            rows = slice(half * t // 2, (half + 1) * t // 2)
            xh, ih = store(x[rows].copy(), F32)[0], np.ascontiguousarray(idx[rows])
            part = empty((e, cap, h), F32)
            call("braid_k_dispatch", F32, xh, ih, part, t // 2, h, k, e, cap, 1)
            np.testing.assert_array_equal(values(part, F32),
                                          values(whole, F32)[:, half * cap:(half + 1) * cap])
        # One group of all 16 tokens is another function: expert 0 keeps 2
        # tokens of the batch, not 2 of each half.
        self.assertEqual(int((ops.assign_slots(idx, e, cap, 2)[:, 0] >= 0).sum()), 4)
        self.assertEqual(int((ops.assign_slots(idx, e, cap, 1)[:, 0] >= 0).sum()), 2)


# --- program errors abort with a message -------------------------------------

ABORT_SCRIPT = r"""
import ctypes, sys
import numpy as np
lib = ctypes.CDLL(sys.argv[1])
P, I, I4 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
which = sys.argv[2]
if which == "embedding":
    tok = np.array([0, 5], dtype=np.int32); tab = np.zeros((5, 2), np.float32)
    out = np.zeros((2, 2), np.float32)
    lib.braid_k_embedding.argtypes = [P, I4, I4, P, P, P, P, I, I, I, I]
    lib.braid_k_embedding(None, 0, 3, tok.ctypes.data, tab.ctypes.data, None, out.ctypes.data,
                          2, 2, 5, 2)
elif which == "cross_entropy":
    lab = np.array([-1], dtype=np.int64); x = np.zeros((1, 4), np.float32)
    loss = np.zeros((), np.float32)
    lib.braid_k_cross_entropy.argtypes = [P, I4, I4, P, P, P, I, I]
    lib.braid_k_cross_entropy(None, 0, 4, x.ctypes.data, lab.ctypes.data, loss.ctypes.data, 1, 4)
elif which == "dispatch":
    idx = np.array([[3]], dtype=np.int32); x = np.zeros((1, 2), np.float32)
    out = np.zeros((3, 1, 2), np.float32)
    lib.braid_k_dispatch.argtypes = [P, I4, P, P, P, I, I, I, I, I, I]
    lib.braid_k_dispatch(None, 0, x.ctypes.data, idx.ctypes.data, out.ctypes.data, 1, 2, 1, 3, 1,
                         1)
print("returned")
"""


class Aborts(Case):
    def test_out_of_range(self):
        self.check_aborts(ABORT_SCRIPT, (
            ("embedding", "braid: embedding: token 5 at position 1 is outside [0, 5)"),
            ("cross_entropy", "braid: cross_entropy: label -1 of row 0"),
            ("dispatch", "braid: dispatch: expert index 3 of token 0")))


if __name__ == "__main__":
    main("cpu-kernels.py", width=24)
