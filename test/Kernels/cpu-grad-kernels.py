# The CPU backward and optimizer kernels of runtime/src/cpu (grad_*.cpp,
# optimizer.cpp) against float64 vector-Jacobian products written here with
# numpy (independent of the kernels and of test/lib/braid_ref). Every
# runtime/src/cpu/*.cpp is compiled here with the host compiler (-O1 keeps the
# build a few seconds), so the test does not depend on the CMake wiring.
#
# RUN: c++ -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include %braid_src/runtime/src/cpu/*.cpp -o %t.so
# RUN: %python %s %t.so
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

import ctypes
import math
import os
import subprocess
import sys
import unittest

import numpy as np

LIB_PATH = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
LIB = ctypes.CDLL(LIB_PATH) if LIB_PATH else None
RNG = np.random.default_rng(7351)

F32, BF16, F16, I32, I64 = 0, 1, 2, 3, 4
ACTS = {"silu": 0, "gelu": 1, "gelu_tanh": 2, "sigmoid": 3, "relu": 4}
TOL = {F32: 1e-5, BF16: 2.0 ** -8, F16: 2.0 ** -10}
DTN = {F32: "f32", BF16: "bf16", F16: "f16"}
MAX_ERR = {}  # (kernel, dtype) -> largest relative error seen
FD_ERR = {}   # op -> largest finite-difference discrepancy of the numpy VJP

P, I, I4, D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32, ctypes.c_double
SIGS = {
    # forward kernels (check 1)
    "braid_k_embedding": [P, I4, I4, P, P, P, P, I, I, I, I],
    "braid_k_attention": [P, I4, P, P, P, P, I, I, I, I, I, I, I, I4, D, D],
    "braid_k_rms_norm": [P, I4, P, P, P, I, I, D],
    "braid_k_layer_norm": [P, I4, P, P, P, P, I, I, D],
    "braid_k_unary": [P, I4, I4, P, P, I],
    "braid_k_cross_entropy": [P, I4, I4, P, P, P, I, I],
    "braid_k_conv1d": [P, I4, P, P, P, P, I, I, I, I],
    "braid_k_selective_scan": [P, I4, P, P, P, P, P, P, P, I, I, I, I, I4],
    "braid_k_router": [P, I4, P, P, P, I, I, I, I4],
    "braid_k_dispatch": [P, I4, P, P, P, I, I, I, I, I],
    "braid_k_combine": [P, I4, P, P, P, P, I, I, I, I, I],
    # backward
    "braid_k_sum_rows": [P, I4, P, P, I, I],
    "braid_k_activation_grad": [P, I4, I4, P, P, P, I],
    "braid_k_attention_grad": [P, I4, P, P, P, P, P, P, P, I, I, I, I, I, I, I, I4, D, D],
    "braid_k_rms_norm_grad": [P, I4, P, P, P, P, P, I, I, D],
    "braid_k_layer_norm_grad": [P, I4, P, P, P, P, P, P, I, I, D],
    "braid_k_embedding_grad": [P, I4, I4, P, P, P, I, I, I],
    "braid_k_position_grad": [P, I4, P, P, I, I, I, I],
    "braid_k_cross_entropy_grad": [P, I4, I4, P, P, P, P, I, I],
    "braid_k_conv1d_grad": [P, I4, P, P, P, P, P, P, I, I, I, I],
    "braid_k_selective_scan_grad": [P, I4, P, P, P, P, P, P, P, P, P, P, P, P, P,
                                    I, I, I, I, I4],
    "braid_k_router_grad": [P, I4, P, P, P, P, I, I, I, I4],
    "braid_k_dispatch_grad": [P, I4, P, P, P, I, I, I, I, I],
    "braid_k_combine_grad": [P, I4, P, P, P, P, P, P, I, I, I, I, I],
    # optimizer
    "braid_k_sum_squares": [P, I4, P, P, I],
    "braid_k_clip_coefficient": [P, P, P, D],
    "braid_k_sgd_update": [P, I4, P, P, P, I, D, D],
    "braid_k_adamw_update": [P, I4, P, P, P, P, P, P, I, D, D, D, D, D],
    "braid_k_increment": [P, P],
    "braid_k_convert": [P, I4, I4, P, P, I],
    "braid_k_zero": [P, I4, P, I],
}
if LIB is not None:
    for _name, _args in SIGS.items():
        getattr(LIB, _name).argtypes = _args
        getattr(LIB, _name).restype = None


def call(name, *args):
    conv = [a.ctypes.data if isinstance(a, np.ndarray) else a for a in args]
    getattr(LIB, name)(None, *conv)


# --- storage types -------------------------------------------------------------

def to_bf16(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), r)


def from_bf16(b):
    return (np.asarray(b, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def store(x, dt):
    """(array passed to the kernel, its values as float64)."""
    x32 = np.ascontiguousarray(x, dtype=np.float32)
    if dt == F32:
        return x32, x32.astype(np.float64)
    if dt == BF16:
        b = to_bf16(x32)
        return b, from_bf16(b).astype(np.float64)
    h = x32.astype(np.float16)
    return h, h.astype(np.float64)


def values(stored, dt):
    if dt == F32:
        return stored.astype(np.float64)
    if dt == BF16:
        return from_bf16(stored).astype(np.float64)
    return stored.astype(np.float64)


def empty(shape, dt):
    return np.full(shape, np.nan if dt != BF16 else 0x7FC0,
                   dtype={F32: np.float32, BF16: np.uint16, F16: np.float16}[dt])


def rel(a, b, floor=1e-30):
    """max|a - b| / max|b|; `floor` bounds the denominator below (for outputs that
    are exactly 0 in theory, where the float64 reference holds rounding noise)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), floor))


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


def conv_fwd(x, w, b):
    B, S, C = x.shape
    K = w.shape[1]
    xp = np.concatenate([np.zeros((B, K - 1, C)), x], 1)
    y = sum(w[:, j] * xp[:, j: j + S] for j in range(K))
    return y + (b if b is not None else 0.0)


def conv_vjp(x, w, dy):
    B, S, C = x.shape
    K = w.shape[1]
    xp = np.concatenate([np.zeros((B, K - 1, C)), x], 1)
    dxp = np.zeros_like(xp)
    dw = np.zeros_like(w)
    for j in range(K):
        dxp[:, j: j + S] += w[:, j] * dy
        dw[:, j] = np.sum(dy * xp[:, j: j + S], (0, 1))
    return dxp[:, K - 1:], dw, dy.sum((0, 1))


def scan_fwd(x, dl, A, Bm, Cm, Dp, sp):
    dt = softplus(dl) if sp else dl
    B, S, Di = x.shape
    h = np.zeros((B, Di, A.shape[1]))
    y = np.zeros_like(x)
    for t in range(S):
        h = np.exp(dt[:, t, :, None] * A) * h + (dt[:, t] * x[:, t])[..., None] * Bm[:, t, None, :]
        y[:, t] = (h * Cm[:, t, None, :]).sum(-1) + Dp * x[:, t]
    return y


def scan_vjp(x, dl, A, Bm, Cm, Dp, dy, sp):
    dt = softplus(dl) if sp else dl
    B, S, Di = x.shape
    N = A.shape[1]
    hs = [np.zeros((B, Di, N))]
    for t in range(S):
        hs.append(np.exp(dt[:, t, :, None] * A) * hs[-1]
                  + (dt[:, t] * x[:, t])[..., None] * Bm[:, t, None, :])
    g = np.zeros((B, Di, N))
    dx, ddt = np.zeros_like(x), np.zeros_like(x)
    dA, dB, dC = np.zeros_like(A), np.zeros_like(Bm), np.zeros_like(Cm)
    for t in reversed(range(S)):
        dyt, dtt, xt = dy[:, t], dt[:, t], x[:, t]
        dh = g + Cm[:, t, None, :] * dyt[..., None]
        dC[:, t] = (dyt[..., None] * hs[t + 1]).sum(1)
        a = np.exp(dtt[..., None] * A)
        ddt[:, t] = (dh * (A * a * hs[t] + Bm[:, t, None, :] * xt[..., None])).sum(-1)
        dA += (dh * dtt[..., None] * a * hs[t]).sum(0)
        dB[:, t] = (dh * (dtt * xt)[..., None]).sum(1)
        dx[:, t] = Dp * dyt + dtt * (dh * Bm[:, t, None, :]).sum(-1)
        g = a * dh
    dD = (dy * x).sum((0, 1))
    return dx, (ddt * sigmoid(dl) if sp else ddt), dA, dB, dC, dD


def router_fwd(logits, idx, normalize):
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    w = np.take_along_axis(p, idx.astype(np.int64), 1)
    return w / w.sum(-1, keepdims=True) if normalize else w


def router_vjp(logits, idx, dw, normalize):
    """Through explicit Jacobians: dW/dp (K x E) then dp/dx = diag(p) - p p^T."""
    T, E = logits.shape
    K = idx.shape[1]
    out = np.zeros_like(logits)
    for t in range(T):
        p = np.exp(logits[t] - logits[t].max())
        p /= p.sum()
        jp = np.diag(p) - np.outer(p, p)
        jw = np.zeros((K, E))
        sel = idx[t].astype(np.int64)
        if normalize:
            z = p[sel].sum()
            mult = np.bincount(sel, minlength=E)
            for j in range(K):
                jw[j, sel[j]] += 1.0 / z
                jw[j] -= p[sel[j]] * mult / z ** 2
        else:
            jw[np.arange(K), sel] = 1.0
        out[t] = dw[t] @ jw @ jp
    return out


def slots(idx, E, cap):
    """slot[t, j] of each assignment, -1 when dropped (j-major, then t)."""
    T, K = idx.shape
    count = np.zeros(E, dtype=np.int64)
    slot = np.full((T, K), -1, dtype=np.int64)
    for j in range(K):
        for t in range(T):
            e = idx[t, j]
            if count[e] < cap:
                slot[t, j] = count[e]
            count[e] += 1
    return slot


def dispatch_fwd(x, idx, E, cap):
    out = np.zeros((E, cap, x.shape[1]))
    sl = slots(idx, E, cap)
    for (t, j), s in np.ndenumerate(sl):
        if s >= 0:
            out[idx[t, j], s] = x[t]
    return out


def dispatch_vjp(dd, idx, cap):
    sl = slots(idx, dd.shape[0], cap)
    dx = np.zeros((idx.shape[0], dd.shape[2]))
    for (t, j), s in np.ndenumerate(sl):
        if s >= 0:
            dx[t] += dd[idx[t, j], s]
    return dx


def combine_fwd(eo, w, idx):
    sl = slots(idx, eo.shape[0], eo.shape[1])
    y = np.zeros((idx.shape[0], eo.shape[2]))
    for (t, j), s in np.ndenumerate(sl):
        if s >= 0:
            y[t] += w[t, j] * eo[idx[t, j], s]
    return y


def combine_vjp(eo, w, idx, dy):
    sl = slots(idx, eo.shape[0], eo.shape[1])
    deo, dw = np.zeros_like(eo), np.zeros_like(w)
    for (t, j), s in np.ndenumerate(sl):
        if s >= 0:
            deo[idx[t, j], s] = w[t, j] * dy[t]
            dw[t, j] = np.dot(dy[t], eo[idx[t, j], s])
    return deo, dw


# --- finite differences of the numpy forward (float64) -------------------------------

def fd_check(test, op, fwd, args, wrt, vjps, u, eps=1e-5, tol=1e-7):
    """<u, J v> by central differences against sum_i <vjp_i, v_i>."""
    dirs = [RNG.standard_normal(np.shape(args[i])) for i in wrt]

    def at(sign):
        a = list(args)
        for i, v in zip(wrt, dirs):
            a[i] = args[i] + sign * eps * v
        return fwd(*a)

    fd = float(np.sum(u * (at(1.0) - at(-1.0)) / (2.0 * eps)))
    an = float(sum(np.sum(g * v) for g, v in zip(vjps, dirs)))
    err = abs(fd - an) / max(abs(an), 1.0)
    FD_ERR[op] = max(FD_ERR.get(op, 0.0), err)
    test.assertLessEqual(err, tol, f"{op}: finite differences {fd} vs VJP {an}")


class Case(unittest.TestCase):
    def close(self, kernel, dt, got_stored, ref, what="", tol=None, floor=1e-30):
        got = values(got_stored, dt)
        self.assertFalse(np.isnan(got).any(), f"{kernel}{what}: NaN in the output")
        err = rel(got, ref, floor)
        key = (kernel, DTN[dt])
        MAX_ERR[key] = max(MAX_ERR.get(key, 0.0), err)
        self.assertLessEqual(err, TOL[dt] if tol is None else tol,
                             f"{kernel} {key[1]}{what}: rel error {err:.3g}")

    def fwd_close(self, kernel, got, ref, what=""):
        err = rel(np.asarray(got, dtype=np.float64), ref)
        self.assertLessEqual(err, 1e-5, f"forward {kernel}{what}: the numpy forward differs "
                             f"from the kernel (rel {err:.3g})")

    def randn(self, *shape, scale=1.0):
        return (RNG.standard_normal(shape) * scale).astype(np.float32)


DTYPES = (F32, BF16, F16)


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
            call("braid_k_attention", F32, q32, k32, v32, o, b, s, skv, hq, hkv, d, dv,
                 int(causal), scale, theta or 0.0)
            self.fwd_close("attention", o, attn_fwd(q, k, v, causal, scale, theta), what)
            fd_check(self, "attention", lambda a, c, e: attn_fwd(a, c, e, causal, scale, theta),
                     [q, k, v], [0, 1, 2], attn_vjp(q, k, v, do, causal, scale, theta), do)
        for dt in dts:
            (qs, q), (ks, k), (vs, v), (dos, do) = (store(a, dt) for a in (q32, k32, v32, do32))
            dq, dk, dvv = empty(q.shape, dt), empty(k.shape, dt), empty(v.shape, dt)
            call("braid_k_attention_grad", dt, qs, ks, vs, dos, dq, dk, dvv, b, s, skv, hq, hkv,
                 d, dv, int(causal), scale, theta or 0.0)
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


# --- Mamba ---------------------------------------------------------------------------------

class Mamba(Case):
    def test_conv1d_grad(self):
        for b, s, c, k, with_bias in ((1, 1, 1, 1, True), (2, 16, 64, 4, True),
                                      (1, 3, 300, 4, False), (2, 5, 3, 7, True),
                                      (2, 9, 5, 1, True), (1, 4, 1100, 3, True)):
            x32, w32, b32, dy32 = (self.randn(b, s, c), self.randn(c, k), self.randn(c),
                                   self.randn(b, s, c))
            if c < 500:
                x, w, bb, dy = (a.astype(np.float64) for a in (x32, w32, b32, dy32))
                y = np.zeros_like(x32)
                call("braid_k_conv1d", F32, x32, w32, b32, y, b, s, c, k)
                self.fwd_close("conv1d", y, conv_fwd(x, w, bb))
                fd_check(self, "conv1d", conv_fwd, [x, w, bb], [0, 1, 2], conv_vjp(x, w, dy), dy)
            for dt in DTYPES:
                (xs, x), (ws, w), (dys, dy) = (store(a, dt) for a in (x32, w32, dy32))
                dx, dw, db = empty((b, s, c), dt), empty((c, k), dt), empty(c, dt)
                call("braid_k_conv1d_grad", dt, xs, ws, dys, dx, dw, db if with_bias else None,
                     b, s, c, k)
                rdx, rdw, rdb = conv_vjp(x, w, dy)
                what = f" {b}x{s}x{c} k={k}"
                self.close("conv1d_grad.dx", dt, dx, rdx, what)
                self.close("conv1d_grad.dw", dt, dw, rdw, what)
                if with_bias:
                    self.close("conv1d_grad.db", dt, db, rdb, what)

    def test_selective_scan_grad(self):
        for dts, b, s, di, n, sp in (((F32, BF16, F16), 2, 16, 8, 16, True),
                                     ((F32, BF16), 1, 33, 5, 3, False),
                                     ((F32,), 1, 1, 1, 1, True), ((F32,), 2, 7, 17, 4, True),
                                     ((F32,), 1, 3, 2, 1024, False)):  # max state
            x32 = self.randn(b, s, di)
            if sp:
                dl32 = self.randn(b, s, di, scale=2.0)
                dl32.flat[:: max(1, dl32.size // 3)] = 25.0  # softplus(25) ~ 25, sigmoid ~ 1
            else:
                dl32 = np.abs(self.randn(b, s, di)) * 0.5
            A32 = -np.exp(self.randn(di, n, scale=0.5))
            B32, C32, D32, dy32 = (self.randn(b, s, n), self.randn(b, s, n), self.randn(di),
                                   self.randn(b, s, di))
            what = f" {b}x{s}x{di}x{n} softplus={sp}"
            if n < 100:
                args = [a.astype(np.float64) for a in (x32, dl32, A32, B32, C32, D32)]
                y = np.zeros_like(x32)
                call("braid_k_selective_scan", F32, x32, dl32, A32, B32, C32, D32, y, b, s, di, n,
                     int(sp))
                self.fwd_close("selective_scan", y, scan_fwd(*args, sp), what)
                dy = dy32.astype(np.float64)
                fd_check(self, "selective_scan", lambda *a: scan_fwd(*a, sp), args,
                         [0, 1, 2, 3, 4, 5], scan_vjp(*args, dy, sp), dy)
            for dt in dts:
                st = [store(a, dt) for a in (x32, dl32, A32, B32, C32, D32, dy32)]
                ins, vals = [p[0] for p in st], [p[1] for p in st]
                outs = [empty(a.shape, dt) for a in (x32, dl32, A32, B32, C32, D32)]
                call("braid_k_selective_scan_grad", dt, *ins, *outs, b, s, di, n, int(sp))
                refs = scan_vjp(*vals, sp)
                for nm, o, r in zip(("dx", "ddelta", "dA", "dB", "dC", "dD"), outs, refs):
                    self.close(f"selective_scan_grad.{nm}", dt, o, r, what)


# --- mixture of experts ----------------------------------------------------------------------

class MoE(Case):
    def router_case(self, logits32, k, normalize, dts, fd=False):
        t, e = logits32.shape
        idx = np.zeros((t, k), dtype=np.int32)
        w = np.zeros((t, k), np.float32)
        call("braid_k_router", F32, logits32, w, idx, t, e, k, int(normalize))
        x = logits32.astype(np.float64)
        self.fwd_close("router", w, router_fwd(x, idx, normalize))
        dw32 = self.randn(t, k)
        if fd:
            fd_check(self, "router", lambda a: router_fwd(a, idx, normalize), [x], [0],
                     [router_vjp(x, idx, dw32.astype(np.float64), normalize)], dw32)
        for dt in dts:
            (ls, lv), (dws, dwv) = store(logits32, dt), store(dw32, dt)
            dl = empty((t, e), dt)
            call("braid_k_router_grad", dt, ls, idx, dws, dl, t, e, k, int(normalize))
            # k = 1 normalized: w == 1, the cotangent is 0 (floor: dw ~ N(0, 1)).
            self.close("router_grad", dt, dl, router_vjp(lv, idx, dwv, normalize),
                       f" {t}x{e} k={k} normalize={normalize}", floor=1e-3)

    def test_router_grad(self):
        for t, e in ((1, 1), (32, 8), (5, 3), (17, 65)):
            for k in sorted({1, min(2, e), e}):
                for normalize in (False, True):
                    self.router_case(self.randn(t, e, scale=2.0), k, normalize, DTYPES,
                                     fd=(t, e) == (5, 3))

    def test_router_ties(self):
        rows = np.float32([[0, 0, 0, 0], [1, 2, 2, 0], [3, 1, 3, 3], [0, 5, 0, 5],
                           [-1, -1, 2, -1], [7, 7, 7, 7]])
        for k in (1, 2, 3):
            for normalize in (False, True):
                self.router_case(rows, k, normalize, DTYPES, fd=True)

    def test_router_grad_duplicates(self):
        # Indices are operands: repeated experts follow the same formula.
        x32 = self.randn(4, 5)
        idx = np.int32([[1, 1], [0, 3], [4, 4], [2, 0]])
        dw32 = self.randn(4, 2)
        x, dw = x32.astype(np.float64), dw32.astype(np.float64)
        for normalize in (False, True):
            ref = router_vjp(x, idx, dw, normalize)
            fd_check(self, "router", lambda a: router_fwd(a, idx, normalize), [x], [0], [ref],
                     dw)
            dl = np.zeros((4, 5), np.float32)
            call("braid_k_router_grad", F32, x32, idx, dw32, dl, 4, 5, 2, int(normalize))
            self.close("router_grad", F32, dl, ref, " duplicates")

    def test_dispatch_combine_grad(self):
        dropped = 0
        for t, h, k, e, cap in ((1, 1, 1, 1, 1), (32, 64, 2, 8, 10), (32, 17, 2, 8, 3),
                                (9, 300, 3, 4, 2), (6, 5, 2, 3, 12)):
            idx = np.stack([RNG.permutation(e)[:k] for _ in range(t)]).astype(np.int32)
            idx[: t // 2, 0] = 0  # crowd expert 0: drops when cap < t
            for r in range(t // 2):
                if k > 1 and idx[r, 1] == 0:
                    idx[r, 1] = 1 if e > 1 else 0
            sl = slots(idx, e, cap)
            dropped += int((sl < 0).sum())
            x32, eo32, w32 = self.randn(t, h), self.randn(e, cap, h), np.abs(self.randn(t, k))
            dd32, dy32 = self.randn(e, cap, h), self.randn(t, h)
            # forwards and FD
            x, eo, w, dd, dy = (a.astype(np.float64) for a in (x32, eo32, w32, dd32, dy32))
            o = np.zeros((e, cap, h), np.float32)
            call("braid_k_dispatch", F32, x32, idx, o, t, h, k, e, cap)
            self.fwd_close("dispatch", o, dispatch_fwd(x, idx, e, cap))
            y = np.zeros((t, h), np.float32)
            call("braid_k_combine", F32, eo32, w32, idx, y, t, h, k, e, cap)
            self.fwd_close("combine", y, combine_fwd(eo, w, idx))
            fd_check(self, "dispatch", lambda a: dispatch_fwd(a, idx, e, cap), [x], [0],
                     [dispatch_vjp(dd, idx, cap)], dd)
            fd_check(self, "combine", lambda a, c: combine_fwd(a, c, idx), [eo, w], [0, 1],
                     combine_vjp(eo, w, idx, dy), dy)
            for dt in DTYPES:
                (dds, ddv), (eos, eov), (ws, wv), (dys, dyv) = (
                    store(a, dt) for a in (dd32, eo32, w32, dy32))
                dx = empty((t, h), dt)
                call("braid_k_dispatch_grad", dt, dds, idx, dx, t, h, k, e, cap)
                what = f" t={t} k={k} e={e} cap={cap}"
                self.close("dispatch_grad", dt, dx, dispatch_vjp(ddv, idx, cap), what)
                deo, dw = empty((e, cap, h), dt), empty((t, k), dt)
                call("braid_k_combine_grad", dt, eos, ws, idx, dys, deo, dw, t, h, k, e, cap)
                rdeo, rdw = combine_vjp(eov, wv, idx, dyv)
                self.close("combine_grad.dexpert", dt, deo, rdeo, what)
                self.close("combine_grad.dweights", dt, dw, rdw, what)
                self.assertTrue((values(dw, dt)[sl < 0] == 0).all())
        self.assertGreater(dropped, 0)


# --- optimizer -------------------------------------------------------------------------------

class Optimizer(Case):
    def update_close(self, kernel, dt, before, got_stored, ref):
        """f32: the error relative to the largest update ref - before (~lr; the f32
        rounding of p ~ 1 is 6e-8, ~1e-5 of an update of 1e-2: bound 2e-5);
        bf16 / f16: the storage rounding of p, relative to max|p| as elsewhere."""
        if dt == F32:
            err = rel(values(got_stored, dt) - before, ref - before)
            MAX_ERR[(kernel, "f32")] = max(MAX_ERR.get((kernel, "f32"), 0.0), err)
            self.assertLessEqual(err, 2e-5, kernel)
        else:
            self.close(kernel, dt, got_stored, ref)

    def test_sum_squares_and_clip(self):
        for dt in DTYPES:
            xs, x = store(self.randn(1001, scale=3.0), dt)
            acc = np.array(2.5, dtype=np.float32)
            call("braid_k_sum_squares", dt, xs, acc, x.size)
            self.close("sum_squares", F32, acc, 2.5 + np.sum(x * x))
        for sumsq, max_norm in ((100.0, 1.0), (0.25, 1.0), (0.0, 1.0), (4.0, 0.0), (4.0, -1.0),
                                (1e6, 3.0)):
            coef = np.zeros((), np.float32)
            call("braid_k_clip_coefficient", np.array(sumsq, np.float32), coef, max_norm)
            ref = 1.0 if max_norm <= 0 else min(1.0, max_norm / (math.sqrt(sumsq) + 1e-6))
            self.close("clip_coefficient", F32, coef, ref, f" {sumsq} {max_norm}", tol=1e-7)

    def test_sgd(self):
        for dt in DTYPES:
            for n, coef, lr, wd in ((1, 1.0, 0.1, 0.0), (777, 0.3, 0.01, 0.1)):
                ps, p = store(self.randn(n), dt)
                gs, g = store(self.randn(n), dt)
                call("braid_k_sgd_update", dt, ps, gs, np.array(coef, np.float32), n, lr, wd)
                gg = float(np.float32(coef)) * g
                self.update_close("sgd_update", dt, p, ps, p - lr * (gg + wd * p))

    def test_adamw(self):
        for dt in DTYPES:
            n, lr, b1, b2, eps, wd = 1003, 1e-2, 0.9, 0.95, 1e-8, 0.1
            ps, p = store(self.randn(n), dt)
            m = self.randn(n, scale=0.1)
            v = np.abs(self.randn(n, scale=0.1))
            m0, v0 = m.astype(np.float64), v.astype(np.float64)
            for step, coef in ((1.0, 1.0), (7.0, 0.5)):
                gs, g = store(self.randn(n), dt)
                pv = values(ps, dt)
                mv, vv = m.astype(np.float64), v.astype(np.float64)
                call("braid_k_adamw_update", dt, ps, gs, m, v, np.array(coef, np.float32),
                     np.array(step, np.float32), n, lr, b1, b2, eps, wd)
                gg = coef * g
                rm = b1 * mv + (1 - b1) * gg
                rv = b2 * vv + (1 - b2) * gg * gg
                rp = pv - lr * (rm / (1 - b1 ** step) / (np.sqrt(rv / (1 - b2 ** step)) + eps)
                                + wd * pv)
                self.close("adamw_update.m", F32, m, rm, tol=1e-6)
                self.close("adamw_update.v", F32, v, rv, tol=1e-6)
                self.update_close("adamw_update.p", dt, pv, ps, rp)
            self.assertFalse(np.array_equal(m, m0) or np.array_equal(v, v0))

    def test_increment_zero_convert(self):
        step = np.array(3.0, np.float32)
        call("braid_k_increment", step)
        call("braid_k_increment", step)
        self.assertEqual(float(step), 5.0)
        for dt, npdt in ((F32, np.float32), (BF16, np.uint16), (F16, np.float16), (I32, np.int32),
                         (I64, np.int64)):
            y = np.full(37, 5, dtype=npdt)
            call("braid_k_zero", dt, y, 37)
            self.assertTrue((y.view(np.uint8) == 0).all())
        x = np.concatenate([self.randn(3000, scale=10.0), self.randn(500, scale=1e-6),
                            np.float32([0.0, -0.0, np.inf, -np.inf, 65520.0, 1.00390625,
                                        3e38])])
        with np.errstate(over="ignore"):
            as_dt = {F32: x, BF16: to_bf16(x), F16: x.astype(np.float16)}
        for src in DTYPES:
            for dst in DTYPES:
                xin = as_dt[src]
                srcv = values(xin, src).astype(np.float32)
                with np.errstate(over="ignore"):
                    expect = {F32: srcv, BF16: to_bf16(srcv), F16: srcv.astype(np.float16)}[dst]
                y = empty(x.size, dst)
                call("braid_k_convert", src, dst, xin, y, x.size)
                np.testing.assert_array_equal(y.view(np.uint8), expect.view(np.uint8),
                                              err_msg=f"convert {DTN[src]} -> {DTN[dst]}")


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
elif which == "scan":
    lib.braid_k_selective_scan_grad.argtypes = [P, I4] + [P] * 13 + [I, I, I, I, I4]
    lib.braid_k_selective_scan_grad(None, 0, *([z] * 13), 1, 4096, 1, 16, 1)
print("returned")
"""


class Aborts(Case):
    def test_limits(self):
        for which, msg in (("embedding_grad",
                            "braid: embedding_grad: token 5 at position 1 is outside [0, 5)"),
                           ("scan", "braid: selective_scan_grad: seq x state = 4096 x 16 "
                                    "exceeds the supported 32768")):
            r = subprocess.run([sys.executable, "-c", ABORT_SCRIPT, LIB_PATH, which],
                               capture_output=True, text=True, timeout=60)
            self.assertNotEqual(r.returncode, 0, which)
            self.assertNotIn("returned", r.stdout)
            self.assertIn(msg, r.stderr)


if __name__ == "__main__":
    if LIB is None:
        sys.exit("usage: cpu-grad-kernels.py KERNELS.so")
    prog = unittest.main(argv=sys.argv[:1], exit=False, verbosity=1)
    for (kernel, dt), err in sorted(MAX_ERR.items()):
        print(f"max rel error {kernel:32s} {dt:5s} {err:.3e}")
    for op, err in sorted(FD_ERR.items()):
        print(f"numpy VJP vs finite differences {op:16s} {err:.3e}")
    sys.exit(0 if prog.result.wasSuccessful() else 1)
