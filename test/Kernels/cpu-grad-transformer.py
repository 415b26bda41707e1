# The CPU backward kernels of the transformer ops (grad_elementwise.cpp,
# grad_norms.cpp, grad_attention.cpp, grad_embedding_loss.cpp) of runtime/src/cpu
# against float64 vector-Jacobian products written here with
# numpy (independent of the kernels and of test/lib/braid_ref). The kernels of
# runtime/src/cpu are compiled here with the host compiler (-O1 keeps the
# build a few seconds), so the test does not depend on the CMake wiring; the
# harness (library loading, storage types, errors) is Inputs/kernel_harness.py.
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include %braid_src/runtime/src/cpu/*.cpp -o %t.so
# RUN: %ctypes_python %s %t.so
#
# Three checks per op:
# 1. the numpy forward written here equals the runtime's FORWARD kernel on the
#    same f32 inputs (rel <= 1e-5): the VJPs below differentiate the function
#    the runtime computes (slot order, RoPE sign, softplus, ...);
# 2. the numpy VJP equals central finite differences of the numpy forward in
#    float64: <u, (f(x + e v) - f(x - e v)) / 2e> against sum_i <vjp_i, v_i>
#    for a random cotangent u and direction v, e = 1e-5 (truncation ~e^2,
#    cancellation ~1e-16 / e: both < 1e-9 relative; the bound is 1e-7);
# 3. the backward kernel equals the numpy VJP evaluated in float64 on the
#    stored inputs, rel(a, b) = max|a - b| / max|b| per output tensor.
#
# Bounds of 3:
# - f32 storage, 1e-5: the kernels compute in f32 with double row sums
#   (norms, softmax statistics, column sums of parameter gradients). A sum of
#   n f32 products has a rounding error ~sqrt(n) 2^-24 of the largest terms
#   typically (n 2^-24 worst case); n <= ~100 here with N(0, 1) data gives a
#   few 1e-7 relative to the largest output. The recomputed softmax, the
#   ds = p (dp - delta) subtraction (cancellation is relative to |dp|, which is
#   bounded by the largest output's scale) and the scan's reverse recurrence
#   over <= 33 steps (a few ulps per step, |a_t| < 1 damping) stay well under.
# - bf16 storage, 2^-8 (f16: 2^-10): the reference uses the rounded inputs;
#   the kernel adds one rounding of the stored result (<= 2^-9, resp. 2^-11,
#   relative) to the f32 error above.
# - Pure data movement and conversions: bit-exact.

import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))

import numpy as np  # noqa: E402

import kernel_harness  # noqa: E402
from kernel_harness import (BF16, DTYPES, F16, F32, I32, I64, attn, call, declare,  # noqa: E402
                            fd_check, main)
from kernel_harness import poisoned as empty, store64 as store, values64 as values  # noqa: E402

RNG = np.random.default_rng(7351)
ACTS = {"silu": 0, "gelu": 1, "gelu_tanh": 2, "sigmoid": 3, "relu": 4}

declare(["braid_k_embedding", "braid_k_attention", "braid_k_rms_norm", "braid_k_layer_norm",
         "braid_k_unary", "braid_k_cross_entropy", "braid_k_sum_rows", "braid_k_activation_grad",
         "braid_k_attention_grad", "braid_k_rms_norm_grad", "braid_k_layer_norm_grad",
         "braid_k_embedding_grad", "braid_k_position_grad", "braid_k_cross_entropy_grad"])


# --- float64 references ------------------------------------------------------------

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.logaddexp(0.0, x)


_erf = np.vectorize(math.erf, otypes=[np.float64])
C_GT, A_GT = math.sqrt(2.0 / math.pi), 0.044715


def act_fwd(name, x):
    if name == "silu":
        return x * sigmoid(x)
    if name == "gelu":
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if name == "gelu_tanh":
        return 0.5 * x * (1.0 + np.tanh(C_GT * (x + A_GT * x ** 3)))
    if name == "sigmoid":
        return sigmoid(x)
    return np.maximum(x, 0.0)


def act_deriv(name, x):
    if name == "silu":
        s = sigmoid(x)
        return s + x * s * (1.0 - s)
    if name == "gelu":
        return 0.5 * (1.0 + _erf(x / math.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / math.sqrt(
            2.0 * math.pi)
    if name == "gelu_tanh":
        u = C_GT * (x + A_GT * x ** 3)
        t = np.tanh(u)
        return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * C_GT * (1.0 + 3.0 * A_GT * x * x)
    if name == "sigmoid":
        s = sigmoid(x)
        return s * (1.0 - s)
    return (x > 0).astype(np.float64)


def rms_fwd(x, g, eps):
    r = 1.0 / np.sqrt(np.mean(x * x, -1, keepdims=True) + eps)
    return x * r * g


def rms_vjp(x, g, dy, eps):
    H = x.shape[-1]
    r = 1.0 / np.sqrt(np.mean(x * x, -1, keepdims=True) + eps)
    # y_i = x_i r g_i; dr/dx_j = -r^3 x_j / H
    gdy = g * dy
    dx = r * gdy - x * r ** 3 * np.sum(gdy * x, -1, keepdims=True) / H
    return dx, np.sum(dy * x * r, 0)


def ln_fwd(x, g, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * g + b


def ln_vjp(x, g, dy, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    r = 1.0 / np.sqrt(v + eps)
    xh = (x - m) * r
    dxh = dy * g
    dx = r * (dxh - dxh.mean(-1, keepdims=True) - xh * (dxh * xh).mean(-1, keepdims=True))
    return dx, np.sum(dy * xh, 0), np.sum(dy, 0)


def rope_tables(n, d, theta):
    half = d // 2
    f = theta ** (-2.0 * np.arange(half) / d)
    ang = np.arange(n)[:, None] * f[None, :]
    return np.cos(ang)[None, :, None, :], np.sin(ang)[None, :, None, :]


def rope(x, theta, inverse=False):
    if not theta:
        return x
    d = x.shape[-1]
    c, s = rope_tables(x.shape[1], d, theta)
    lo, hi = x[..., : d // 2], x[..., d // 2:]
    if inverse:  # the transpose of the rotation
        return np.concatenate([lo * c + hi * s, hi * c - lo * s], -1)
    return np.concatenate([lo * c - hi * s, hi * c + lo * s], -1)


def attn_probs(q, k, causal, scale, theta):
    qr, kr = rope(q, theta), rope(k, theta)
    g = q.shape[2] // k.shape[2]
    kr = np.repeat(kr, g, axis=2)
    sc = scale * np.einsum("bshd,bthd->bhst", qr, kr)
    if causal:
        s, t = sc.shape[2], sc.shape[3]
        sc = np.where(np.arange(t)[None, :] > np.arange(s)[:, None], -np.inf, sc)
    sc = sc - sc.max(-1, keepdims=True)
    p = np.exp(sc)
    return p / p.sum(-1, keepdims=True), qr, kr


def attn_fwd(q, k, v, causal, scale, theta):
    p, _, _ = attn_probs(q, k, causal, scale, theta)
    vv = np.repeat(v, q.shape[2] // k.shape[2], axis=2)
    return np.einsum("bhst,bthe->bshe", p, vv)


def attn_vjp(q, k, v, do, causal, scale, theta):
    B, Skv, Hkv, Dd = k.shape
    g = q.shape[2] // Hkv
    p, qr, kr = attn_probs(q, k, causal, scale, theta)
    vv = np.repeat(v, g, axis=2)
    o = np.einsum("bhst,bthe->bshe", p, vv)
    dp = np.einsum("bshe,bthe->bhst", do, vv)
    delta = np.einsum("bshe,bshe->bhs", do, o)
    ds = p * (dp - delta[..., None])
    dqr = scale * np.einsum("bhst,bthd->bshd", ds, kr)
    dkr = scale * np.einsum("bhst,bshd->bthd", ds, qr)
    dvv = np.einsum("bhst,bshe->bthe", p, do)
    dkr = dkr.reshape(B, Skv, Hkv, g, Dd).sum(3)
    dv = dvv.reshape(B, Skv, Hkv, g, v.shape[3]).sum(3)
    return rope(dqr, theta, True), rope(dkr, theta, True), dv


def ce_fwd(x, labels):
    m = x.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(x - m).sum(-1, keepdims=True)))[:, 0]
    return np.mean(lse - x[np.arange(len(labels)), labels])


def ce_vjp(x, labels, dloss):
    p = np.exp(x - x.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    p[np.arange(len(labels)), labels] -= 1.0
    return dloss / len(labels) * p



class Case(kernel_harness.Case):
    rng = RNG


# --- elementwise ---------------------------------------------------------------------

class Elementwise(Case):
    def test_sum_rows(self):
        for dt in DTYPES:
            for rows, n in ((1, 1), (7, 33), (130, 5), (3, 1500)):
                xs, x = store(self.randn(rows, n), dt)
                y = empty(n, dt)
                call("braid_k_sum_rows", dt, xs, y, rows, n)
                self.close("sum_rows", dt, y, x.sum(0))

    def test_activation_grad(self):
        x32 = np.concatenate([self.randn(301, scale=3.0),
                              np.float32([0.0, -0.0, 1e-3, -1e-3, 12.0, -12.0, 40.0, -40.0])])
        for name, act in ACTS.items():
            # forward kernel = numpy forward
            y = np.zeros_like(x32)
            call("braid_k_unary", F32, act, x32, y, x32.size)
            self.fwd_close(f"unary.{name}", y, act_fwd(name, x32.astype(np.float64)))
            # derivative = finite differences (away from relu's kink)
            xf = x32.astype(np.float64)
            xf = xf[np.abs(xf) > 1e-2] if name == "relu" else xf
            u = RNG.standard_normal(xf.shape)
            fd_check(self, f"act.{name}", lambda v, nm=name: act_fwd(nm, v), [xf], [0],
                     [u * act_deriv(name, xf)], u)
            for dt in DTYPES:
                xs, xv = store(x32, dt)
                ds, dy = store(self.randn(x32.size), dt)
                dx = empty(x32.size, dt)
                call("braid_k_activation_grad", dt, act, xs, ds, dx, x32.size)
                self.close(f"activation_grad.{name}", dt, dx, dy * act_deriv(name, xv))
        # relu at 0 and below: exactly 0
        z = np.float32([0.0, -0.0, -1.0, 2.0])
        dx = np.zeros(4, dtype=np.float32)
        call("braid_k_activation_grad", F32, ACTS["relu"], z, np.ones(4, np.float32), dx, 4)
        np.testing.assert_array_equal(dx, [0, 0, 0, 1])


# --- norms -------------------------------------------------------------------------------

class Norms(Case):
    def test_rms_and_layer_norm_grad(self):
        for rows, hidden, eps in ((1, 1, 1e-5), (5, 17, 1e-6), (3, 65, 1e-5), (2, 300, 0.1),
                                  (2, 2500, 1e-5)):  # two column blocks
            x32 = self.randn(rows, hidden, scale=2.0) + 0.5
            g32, b32, dy32 = self.randn(hidden), self.randn(hidden), self.randn(rows, hidden)
            x, g, b, dy = (a.astype(np.float64) for a in (x32, g32, b32, dy32))
            y = np.zeros_like(x32)
            call("braid_k_rms_norm", F32, x32, g32, y, rows, hidden, eps)
            self.fwd_close("rms_norm", y, rms_fwd(x, g, eps))
            call("braid_k_layer_norm", F32, x32, g32, b32, y, rows, hidden, eps)
            self.fwd_close("layer_norm", y, ln_fwd(x, g, b, eps))
            if hidden > 1 and hidden < 1000:
                fd_check(self, "rms_norm", lambda a, c: rms_fwd(a, c, eps), [x, g], [0, 1],
                         rms_vjp(x, g, dy, eps), dy)
                fd_check(self, "layer_norm", lambda a, c, d: ln_fwd(a, c, d, eps), [x, g, b],
                         [0, 1, 2], ln_vjp(x, g, dy, eps), dy)
            for dt in DTYPES:
                xs, xv = store(x32, dt)
                gs, gv = store(g32, dt)
                ds, dyv = store(dy32, dt)
                dx, dg, db = empty((rows, hidden), dt), empty(hidden, dt), empty(hidden, dt)
                call("braid_k_rms_norm_grad", dt, xs, gs, ds, dx, dg, rows, hidden, eps)
                rdx, rdg = rms_vjp(xv, gv, dyv, eps)
                what = f" {rows}x{hidden}"
                if not (dt == F16 and hidden == 1):  # dx ~ eps / x^3: an f16 subnormal
                    self.close("rms_norm_grad.dx", dt, dx, rdx, what)
                self.close("rms_norm_grad.dgamma", dt, dg, rdg, what)
                dx, dg = empty((rows, hidden), dt), empty(hidden, dt)
                call("braid_k_layer_norm_grad", dt, xs, gs, ds, dx, dg, db, rows, hidden, eps)
                rdx, rdg, rdb = ln_vjp(xv, gv, dyv, eps)
                if hidden == 1:  # xh == 0: dx is exactly 0 (up to the rounding of the mean)
                    self.assertLessEqual(np.max(np.abs(values(dx, dt))), 1e-6)
                else:
                    self.close("layer_norm_grad.dx", dt, dx, rdx, what)
                    self.close("layer_norm_grad.dgamma", dt, dg, rdg, what)
                self.close("layer_norm_grad.dbeta", dt, db, rdb, what)


# --- attention -----------------------------------------------------------------------------

class Attention(Case):
    def run_case(self, dts, b, s, skv, hq, hkv, d, dv, causal, scale=None, theta=None,
                 fd=False):
        scale = 1.0 / math.sqrt(d) if scale is None else scale
        q32, k32 = self.randn(b, s, hq, d), self.randn(b, skv, hkv, d)
        v32, do32 = self.randn(b, skv, hkv, dv), self.randn(b, s, hq, dv)
        what = f" b={b} s={s} skv={skv} hq={hq} hkv={hkv} d={d} dv={dv} causal={causal} " \
               f"theta={theta}"
        if fd:
            q, k, v, do = (a.astype(np.float64) for a in (q32, k32, v32, do32))
            o = np.zeros((b, s, hq, dv), np.float32)
            call("braid_k_attention", F32, q32, k32, v32, o,
                 attn(b, s, skv, hq, hkv, d, dv, int(causal), scale, theta or 0.0))
            self.fwd_close("attention", o, attn_fwd(q, k, v, causal, scale, theta), what)
            fd_check(self, "attention", lambda a, c, e: attn_fwd(a, c, e, causal, scale, theta),
                     [q, k, v], [0, 1, 2], attn_vjp(q, k, v, do, causal, scale, theta), do)
        for dt in dts:
            (qs, q), (ks, k), (vs, v), (dos, do) = (store(a, dt) for a in (q32, k32, v32, do32))
            dq, dk, dvv = empty(q.shape, dt), empty(k.shape, dt), empty(v.shape, dt)
            call("braid_k_attention_grad", dt, qs, ks, vs, dos, dq, dk, dvv,
                 attn(b, s, skv, hq, hkv, d, dv, int(causal), scale, theta or 0.0))
            if skv == 0:  # no keys: the output and dq are 0
                rq, rk, rv = np.zeros(q.shape), k, v
            else:
                rq, rk, rv = attn_vjp(q, k, v, do, causal, scale, theta)
            self.close("attention_grad.dq", dt, dq, rq, what)
            self.close("attention_grad.dk", dt, dk, rk, what)
            self.close("attention_grad.dv", dt, dvv, rv, what)

    def test_shapes(self):
        self.run_case(DTYPES, 2, 17, 17, 4, 2, 8, 8, True, theta=1e4, fd=True)  # GQA, causal, RoPE
        self.run_case(DTYPES, 1, 1, 1, 1, 1, 1, 1, False, fd=True)
        self.run_case((F32,), 2, 16, 16, 4, 4, 8, 8, False, fd=True)            # MHA
        self.run_case((F32, BF16), 1, 9, 23, 6, 1, 6, 10, False, theta=1e4, fd=True)  # MQA
        self.run_case((F32,), 1, 3, 65, 2, 1, 16, 3, False, scale=0.7)          # custom scale
        self.run_case((F32,), 1, 33, 33, 3, 3, 4, 5, True)                      # causal, no RoPE
        self.run_case((F32,), 1, 70, 70, 2, 1, 32, 16, True, theta=5e5)         # 64-row blocks + 6
        self.run_case((F32,), 1, 5, 300, 1, 1, 64, 64, False)                   # key blocks: 128+
        self.run_case((F32,), 1, 300, 300, 1, 1, 4, 2, True, theta=1e4)         # far positions
        self.run_case((F32,), 1, 1, 0, 2, 1, 4, 4, False)                       # no keys: zeros
        # 128 x 65 query rows per kv head > kStatRows (8192): statistics recomputed
        self.run_case((F32, BF16), 1, 65, 65, 128, 1, 4, 4, True, theta=1e4)


# --- embedding, positions, loss -------------------------------------------------------------

class EmbeddingLoss(Case):
    def test_embedding_and_position_grad(self):
        for dt in DTYPES:
            for index_dt in (I32, I64):
                for bshape, vocab, hidden, P in (((2, 16), 11, 32, 18), ((1,), 1, 1, 1),
                                                 ((3, 5), 97, 17, 5), ((40,), 3, 2100, 41)):
                    seq = bshape[-1]
                    tok = RNG.integers(0, vocab, bshape).astype(
                        np.int32 if index_dt == I32 else np.int64)
                    n = tok.size
                    dys, dy = store(self.randn(n, hidden), dt)
                    dtab = empty((vocab, hidden), dt)
                    call("braid_k_embedding_grad", dt, index_dt, tok, dys, dtab, n, vocab, hidden)
                    ref = np.zeros((vocab, hidden))
                    np.add.at(ref, tok.reshape(-1), dy)
                    self.close("embedding_grad", dt, dtab, ref)
                    dpos = empty((P, hidden), dt)
                    call("braid_k_position_grad", dt, dys, dpos, n, seq, P, hidden)
                    refp = np.zeros((P, hidden))
                    refp[:seq] = dy.reshape(-1, seq, hidden).sum(0)
                    self.close("position_grad", dt, dpos, refp)
                    self.assertTrue((values(dpos, dt)[seq:] == 0).all())
        # FD of the embedding forward with positions (linear: exact).
        tok = RNG.integers(0, 7, (2, 5)).astype(np.int32)
        tab32, pos32 = self.randn(7, 3), self.randn(6, 3)
        out = np.zeros((2, 5, 3), np.float32)
        call("braid_k_embedding", F32, I32, tok, tab32, pos32, out, 10, 5, 7, 3)
        fwd = lambda t, p: t[tok] + p[np.arange(5)][None]  # noqa: E731
        self.fwd_close("embedding", out, fwd(tab32.astype(np.float64), pos32.astype(np.float64)))
        u = RNG.standard_normal((2, 5, 3))
        dt_ = np.zeros((7, 3))
        np.add.at(dt_, tok.reshape(-1), u.reshape(-1, 3))
        dp_ = np.zeros((6, 3))
        dp_[:5] = u.sum(0)
        fd_check(self, "embedding", fwd, [tab32.astype(np.float64), pos32.astype(np.float64)],
                 [0, 1], [dt_, dp_], u)

    def test_cross_entropy_grad(self):
        for dt in DTYPES:
            for index_dt in (I32, I64):
                for rows, vocab, offset in ((1, 1, 0.0), (32, 97, 0.0), (5, 97, 1000.0),
                                            (3, 300, -50.0)):
                    if dt == F16 and abs(offset) > 100:
                        continue
                    x32 = self.randn(rows, vocab, scale=2.0) + offset
                    lab = RNG.integers(0, vocab, rows).astype(
                        np.int32 if index_dt == I32 else np.int64)
                    xs, x = store(x32, dt)
                    dloss = np.float32(0.75)
                    dx = empty((rows, vocab), dt)
                    call("braid_k_cross_entropy_grad", dt, index_dt, xs, lab,
                         np.array(dloss), dx, rows, vocab)
                    ref = ce_vjp(x, lab, float(dloss))
                    if vocab == 1:
                        self.assertTrue((values(dx, dt) == 0).all())
                    else:
                        self.close("cross_entropy_grad", dt, dx, ref, f" {rows}x{vocab}")
        x = self.randn(6, 13).astype(np.float64)
        lab = RNG.integers(0, 13, 6)
        loss = np.zeros((), np.float32)
        call("braid_k_cross_entropy", F32, I64, x.astype(np.float32), lab.astype(np.int64), loss,
             6, 13)
        self.fwd_close("cross_entropy", loss, ce_fwd(x, lab))
        fd_check(self, "cross_entropy", lambda a: ce_fwd(a, lab), [x], [0],
                 [ce_vjp(x, lab, 1.3)], 1.3)



# --- limits abort with a message ----------------------------------------------------------------

ABORT_SCRIPT = r"""
import ctypes, sys
import numpy as np
lib = ctypes.CDLL(sys.argv[1])
P, I, I4 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
z = np.zeros(1 << 16, np.float32).ctypes.data
which = sys.argv[2]
if which == "embedding_grad":
    tok = np.array([0, 5], dtype=np.int32)
    lib.braid_k_embedding_grad.argtypes = [P, I4, I4, P, P, P, I, I, I]
    lib.braid_k_embedding_grad(None, 0, 3, tok.ctypes.data, z, z, 2, 5, 2)
print("returned")
"""


class Aborts(Case):
    def test_limits(self):
        self.check_aborts(ABORT_SCRIPT, (
            ("embedding_grad", "braid: embedding_grad: token 5 at position 1 is outside [0, 5)"),))


if __name__ == "__main__":
    main("cpu-grad-transformer.py", width=32)
