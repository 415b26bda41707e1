# The CPU backward kernels of the Mamba and mixture-of-experts ops
# (grad_mamba.cpp, grad_moe.cpp) of runtime/src/cpu against float64
# vector-Jacobian products written here with
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
from kernel_harness import (BF16, DTYPES, F16, F32, call, declare, fd_check, main,  # noqa: E402
                            scan)
from kernel_harness import poisoned as empty, store64 as store, values64 as values  # noqa: E402

RNG = np.random.default_rng(7351)

declare(["braid_k_conv1d", "braid_k_selective_scan", "braid_k_router", "braid_k_dispatch",
         "braid_k_combine", "braid_k_conv1d_grad", "braid_k_selective_scan_grad",
         "braid_k_router_grad", "braid_k_dispatch_grad", "braid_k_combine_grad"])


# --- float64 references ------------------------------------------------------------

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.logaddexp(0.0, x)


_erf = np.vectorize(math.erf, otypes=[np.float64])
C_GT, A_GT = math.sqrt(2.0 / math.pi), 0.044715


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



class Case(kernel_harness.Case):
    rng = RNG


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
                call("braid_k_selective_scan", F32, x32, dl32, A32, B32, C32, D32, y,
                     scan(b, s, di, n, int(sp)))
                self.fwd_close("selective_scan", y, scan_fwd(*args, sp), what)
                dy = dy32.astype(np.float64)
                fd_check(self, "selective_scan", lambda *a: scan_fwd(*a, sp), args,
                         [0, 1, 2, 3, 4, 5], scan_vjp(*args, dy, sp), dy)
            for dt in dts:
                st = [store(a, dt) for a in (x32, dl32, A32, B32, C32, D32, dy32)]
                ins, vals = [p[0] for p in st], [p[1] for p in st]
                outs = [empty(a.shape, dt) for a in (x32, dl32, A32, B32, C32, D32)]
                call("braid_k_selective_scan_grad", dt, *ins, *outs, scan(b, s, di, n, int(sp)))
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
            call("braid_k_dispatch", F32, x32, idx, o, t, h, k, e, cap, 1)
            self.fwd_close("dispatch", o, dispatch_fwd(x, idx, e, cap))
            y = np.zeros((t, h), np.float32)
            call("braid_k_combine", F32, eo32, w32, idx, y, t, h, k, e, cap, 1)
            self.fwd_close("combine", y, combine_fwd(eo, w, idx))
            fd_check(self, "dispatch", lambda a: dispatch_fwd(a, idx, e, cap), [x], [0],
                     [dispatch_vjp(dd, idx, cap)], dd)
            fd_check(self, "combine", lambda a, c: combine_fwd(a, c, idx), [eo, w], [0, 1],
                     combine_vjp(eo, w, idx, dy), dy)
            for dt in DTYPES:
                (dds, ddv), (eos, eov), (ws, wv), (dys, dyv) = (
                    store(a, dt) for a in (dd32, eo32, w32, dy32))
                dx = empty((t, h), dt)
                call("braid_k_dispatch_grad", dt, dds, idx, dx, t, h, k, e, cap, 1)
                what = f" t={t} k={k} e={e} cap={cap}"
                self.close("dispatch_grad", dt, dx, dispatch_vjp(ddv, idx, cap), what)
                deo, dw = empty((e, cap, h), dt), empty((t, k), dt)
                call("braid_k_combine_grad", dt, eos, ws, idx, dys, deo, dw, t, h, k, e, cap, 1)
                rdeo, rdw = combine_vjp(eov, wv, idx, dyv)
                self.close("combine_grad.dexpert", dt, deo, rdeo, what)
                self.close("combine_grad.dweights", dt, dw, rdw, what)
                self.assertTrue((values(dw, dt)[sl < 0] == 0).all())
        self.assertGreater(dropped, 0)



# --- limits abort with a message ----------------------------------------------------------------

ABORT_SCRIPT = r"""
import ctypes, sys
import numpy as np
lib = ctypes.CDLL(sys.argv[1])
P, I, I4 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
class Params(ctypes.Structure):  # braid_scan_params
    _fields_ = [("batch", I), ("seq", I), ("channels", I), ("state", I), ("delta_softplus", I4)]
z = np.zeros(1 << 16, np.float32).ctypes.data
which = sys.argv[2]
if which == "scan":
    lib.braid_k_selective_scan_grad.argtypes = [P, I4] + [P] * 13 + [ctypes.POINTER(Params)]
    lib.braid_k_selective_scan_grad(None, 0, *([z] * 13), ctypes.byref(Params(1, 4096, 1, 16, 1)))
print("returned")
"""


class Aborts(Case):
    def test_limits(self):
        self.check_aborts(ABORT_SCRIPT, (
            ("scan", "braid: selective_scan_grad: seq x state = 4096 x 16 "
                     "exceeds the supported 32768"),))


if __name__ == "__main__":
    main("cpu-grad-mamba-moe.py", width=32)
