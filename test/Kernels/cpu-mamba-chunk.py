# The context-parallel Mamba kernels of runtime/src/cpu/mamba.cpp and grad_mamba.cpp
# (braid_k_conv1d_halo[_grad|_accumulate], braid_k_selective_scan_chunk[_grad],
# braid_k_scan_carry[_grad]: the sequence split into chunks, one per rank)
# against float64 numpy references written here (independent of the kernels
# and of test/lib/braid_ref). Compiled here with the host compiler, so the test
# does not depend on the CMake wiring; the harness is Inputs/kernel_harness.py.
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include %braid_src/runtime/src/cpu/*.cpp -o %t.so
# RUN: %ctypes_python %s %t.so
#
# Checks (B=2, S=12, C=Di=6, K=4, N=4, split into 1..4 chunks, even and
# uneven; with and without softplus and conv bias):
# 1. the numpy VJPs (whole conv1d / scan, one scan chunk from h0 with the
#    cotangents of y, h_end and decay, the carry) equal central finite
#    differences of the numpy forwards (float64, bound 1e-7);
# 2. each chunk kernel against its numpy reference (f32 1e-5; bf16 / f16
#    storage 2^-8 / 2^-10 on the rounded inputs), including accumulate = 1
#    into prefilled outputs and NULL optional operands;
# 3. the engine's composition over the chunks equals the whole sequence:
#    conv_halo rows concatenated = conv1d; pass 1 (zero-start h_end, decay),
#    scan_carry, pass 2 (y from h0) = selective_scan; conv: halo_grad plus the
#    next chunk's dhalo (halo_accumulate), dw / db summed = the whole VJP;
#    scan: chunk_grad(h0, dy) -> dh0, scan_carry_grad over the gathered dh0,
#    chunk_grad(NULL, NULL, dhend, ddecay, accumulate) with dA / dD summed =
#    the whole VJP (f32, 1e-5 relative: a few f32 roundings per chunk
#    boundary on top of the kernels' own error);
# 4. the checks can fail: skipping the carry (pass 2 from zero), the halo
#    accumulation or the second chunk_grad pass is off by more than 1%.

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))

import numpy as np  # noqa: E402

import kernel_harness  # noqa: E402
from kernel_harness import BF16, F16, F32, call, declare, fd_check, main, rel, scan  # noqa: E402
from kernel_harness import poisoned, store64 as store, values64 as values  # noqa: E402

RNG = np.random.default_rng(20917)

declare(["braid_k_conv1d", "braid_k_selective_scan", "braid_k_conv1d_grad",
         "braid_k_selective_scan_grad", "braid_k_conv1d_halo", "braid_k_conv1d_halo_grad",
         "braid_k_conv1d_halo_accumulate", "braid_k_selective_scan_chunk",
         "braid_k_scan_carry", "braid_k_selective_scan_chunk_grad",
         "braid_k_scan_carry_grad"])

B, S, C, K, N = 2, 12, 6, 4, 4
SPLITS = ((12,), (6, 6), (4, 4, 4), (3, 3, 3, 3), (5, 7), (3, 4, 5))


# --- float64 references ------------------------------------------------------------

def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    return np.logaddexp(0.0, x)


def conv_fwd(x, w, b):
    """Causal depthwise conv1d with zero padding, explicit loops."""
    Bb, Ss, Cc = x.shape
    Kk = w.shape[1]
    y = np.zeros_like(x)
    for t in range(Ss):
        for j in range(Kk):
            u = t - (Kk - 1) + j
            if u >= 0:
                y[:, t] += w[:, j] * x[:, u]
    return y + (b if b is not None else 0.0)


def conv_vjp(x, w, dy):
    Bb, Ss, Cc = x.shape
    Kk = w.shape[1]
    dx, dw = np.zeros_like(x), np.zeros_like(w)
    for t in range(Ss):
        for j in range(Kk):
            u = t - (Kk - 1) + j
            if u >= 0:
                dx[:, u] += w[:, j] * dy[:, t]
                dw[:, j] += (dy[:, t] * x[:, u]).sum(0)
    return dx, dw, dy.sum((0, 1))


def chunk_fwd(x, dl, A, Bm, Cm, Dp, h0, sp):
    """One scan chunk from h0: (y, h_end, decay)."""
    dt = softplus(dl) if sp else dl
    Bb, Ss, Di = x.shape
    h = np.array(h0, dtype=np.float64)
    y = np.zeros_like(x)
    for t in range(Ss):
        for n in range(A.shape[1]):
            h[:, :, n] = np.exp(dt[:, t] * A[:, n]) * h[:, :, n] + dt[:, t] * x[:, t] * Bm[:, t, None, n]
        y[:, t] = (h * Cm[:, t, None, :]).sum(-1) + Dp * x[:, t]
    decay = np.exp(dt.sum(1)[:, :, None] * A)
    return y, h, decay


def chunk_vjp(x, dl, A, Bm, Cm, Dp, h0, sp, dy, dhend, ddecay):
    """(dx, ddelta, dA, dB, dC, dD, dh0) of chunk_fwd."""
    dt = softplus(dl) if sp else dl
    Bb, Ss, Di = x.shape
    hs = [np.array(h0, dtype=np.float64)]
    for t in range(Ss):
        hs.append(np.exp(dt[:, t, :, None] * A) * hs[-1]
                  + (dt[:, t] * x[:, t])[..., None] * Bm[:, t, None, :])
    sdt = dt.sum(1)
    gd = ddecay * np.exp(sdt[:, :, None] * A)  # d/d(A sdt)
    g = np.array(dhend, dtype=np.float64)
    dx, ddt = np.zeros_like(x), np.zeros_like(x)
    dA = (gd * sdt[:, :, None]).sum(0)
    dB, dC = np.zeros_like(Bm), np.zeros_like(Cm)
    for t in reversed(range(Ss)):
        dyt, dtt, xt = dy[:, t], dt[:, t], x[:, t]
        dh = g + Cm[:, t, None, :] * dyt[..., None]
        dC[:, t] = (dyt[..., None] * hs[t + 1]).sum(1)
        a = np.exp(dtt[..., None] * A)
        ddt[:, t] = (dh * (A * a * hs[t] + Bm[:, t, None, :] * xt[..., None])).sum(-1) \
            + (gd * A).sum(-1)
        dA += (dh * dtt[..., None] * a * hs[t]).sum(0)
        dB[:, t] = (dh * (dtt * xt)[..., None]).sum(1)
        dx[:, t] = Dp * dyt + dtt * (dh * Bm[:, t, None, :]).sum(-1)
        g = a * dh
    dD = (dy * x).sum((0, 1))
    return dx, (ddt * sigmoid(dl) if sp else ddt), dA, dB, dC, dD, g


def carry_fwd(decay_all, hend_all):
    """h0 of every chunk: [chunks, count]."""
    H = np.zeros(decay_all.shape[1])
    out = []
    for j in range(decay_all.shape[0]):
        out.append(H.copy())
        H = decay_all[j] * H + hend_all[j]
    return np.array(out)


def carry_vjp(decay_all, hend_all, dh0_all):
    """(ddecay_all, dhend_all) of <dh0_all, carry_fwd>, by reverse accumulation."""
    P = decay_all.shape[0]
    hin = carry_fwd(decay_all, hend_all)  # hin[j] = H_{j-1}
    ddec, dhe = np.zeros_like(decay_all), np.zeros_like(hend_all)
    dH = np.zeros(decay_all.shape[1])  # cotangent of H_j, j = P-1 first
    for j in reversed(range(P)):
        dhe[j] = dH
        ddec[j] = dH * hin[j]
        dH = dh0_all[j] + decay_all[j] * dH  # cotangent of H_{j-1}
    return ddec, dhe


def bounds(split):
    s0 = np.cumsum((0,) + split)
    return list(zip(s0[:-1], s0[1:]))


class Case(kernel_harness.Case):
    rng = RNG

    def scan_inputs(self, sp, s=S):
        x = self.randn(B, s, C)
        dl = self.randn(B, s, C, scale=1.5) if sp else np.abs(self.randn(B, s, C)) * 0.5
        A = -np.exp(self.randn(C, N, scale=0.5))
        return [x, dl, A, self.randn(B, s, N), self.randn(B, s, N), self.randn(C)]


# --- numpy VJPs against finite differences --------------------------------------------------

class NumpyVJP(Case):
    def test_fd(self):
        x, w, b, dy = (self.randn(*s).astype(np.float64) for s in ((B, S, C), (C, K), (C,),
                                                                      (B, S, C)))
        fd_check(self, "conv1d", conv_fwd, [x, w, b], [0, 1, 2], conv_vjp(x, w, dy), dy)
        for sp in (False, True):
            args = [a.astype(np.float64) for a in self.scan_inputs(sp, 5)]
            h0 = self.randn(B, C, N).astype(np.float64)
            dy, dhe, ddec = self.randn(B, 5, C), self.randn(B, C, N), self.randn(B, C, N)
            u = np.concatenate([a.ravel() for a in (dy, dhe, ddec)]).astype(np.float64)

            def f(*a):
                return np.concatenate([o.ravel() for o in chunk_fwd(*a, sp)])
            fd_check(self, "scan_chunk", f, args + [h0], [0, 1, 2, 3, 4, 5, 6],
                     chunk_vjp(*args, h0, sp, dy, dhe, ddec), u)
        dec = np.exp(-np.abs(self.randn(4, 7))).astype(np.float64)
        he, dh0 = self.randn(4, 7).astype(np.float64), self.randn(4, 7).astype(np.float64)
        fd_check(self, "scan_carry", carry_fwd, [dec, he], [0, 1], carry_vjp(dec, he, dh0), dh0)


# --- each kernel against its reference ------------------------------------------------------

class Kernels(Case):
    def test_conv1d_halo(self):
        for dt in (F32, BF16, F16):
            for with_bias in (True, False):
                (xs, x), (hs, h), (ws, w), (bs, b), (dys, dy) = (
                    store(self.randn(*s), dt) for s in ((B, 5, C), (B, K - 1, C), (C, K), (C,),
                                                        (B, 5, C)))
                ext = np.concatenate([h, x], 1)
                y = poisoned((B, 5, C), dt)
                call("braid_k_conv1d_halo", dt, xs, hs, ws, bs if with_bias else None, y, B, 5, C,
                     K)
                self.close("conv1d_halo", dt, y, conv_fwd(ext, w, b if with_bias else None)[:, K - 1:])
                dyx = np.concatenate([np.zeros((B, K - 1, C)), dy], 1)
                rdext, rdw, rdb = conv_vjp(ext, w, dyx)
                dx, dw, db, dh = (poisoned(s, dt) for s in ((B, 5, C), (C, K), (C,), (B, K - 1, C)))
                call("braid_k_conv1d_halo_grad", dt, xs, hs, ws, dys, dx, dw,
                     db if with_bias else None, dh, B, 5, C, K)
                self.close("conv1d_halo_grad.dx", dt, dx, rdext[:, K - 1:])
                self.close("conv1d_halo_grad.dhalo", dt, dh, rdext[:, :K - 1])
                self.close("conv1d_halo_grad.dw", dt, dw, rdw)
                if with_bias:
                    self.close("conv1d_halo_grad.db", dt, db, rdb)
            (ds, d), (ns, nx) = store(self.randn(B, 5, C), dt), store(self.randn(B, K - 1, C), dt)
            ref = d.copy()
            ref[:, 5 - (K - 1):] += nx
            call("braid_k_conv1d_halo_accumulate", dt, ds, ns, B, 5, C, K)
            self.close("conv1d_halo_accumulate", dt, ds, ref)

    def test_scan_chunk(self):
        for dt in (F32, BF16, F16):
            for sp in (False, True):
                st = [store(a, dt) for a in self.scan_inputs(sp, 7)]
                ins, vals = [p[0] for p in st], [p[1] for p in st]
                h0 = self.randn(B, C, N)
                ry, rhe, rdec = chunk_fwd(*vals, h0.astype(np.float64), sp)
                y, he, dec = poisoned((B, 7, C), dt), poisoned((B, C, N), F32), poisoned((B, C, N), F32)
                call("braid_k_selective_scan_chunk", dt, *ins, h0, y, he, dec,
                     scan(B, 7, C, N, int(sp)))
                what = f" softplus={sp}"
                self.close("scan_chunk.y", dt, y, ry, what)
                # f32 states: the f32 recurrence on rounded inputs.
                self.close("scan_chunk.h_end", F32, he, rhe, what)
                self.close("scan_chunk.decay", F32, dec, rdec, what)
                # NULL h0 = zeros; NULL outputs skipped.
                y0 = poisoned((B, 7, C), dt)
                call("braid_k_selective_scan_chunk", dt, *ins, None, y0, None, None,
                     scan(B, 7, C, N, int(sp)))
                self.close("scan_chunk.y", dt, y0, chunk_fwd(*vals, np.zeros((B, C, N)), sp)[0],
                           what + " h0=NULL")
                # Gradient: all cotangents; written, then accumulated onto prefilled outputs.
                (dys, dy) = store(self.randn(B, 7, C), dt)
                dhe, ddec = self.randn(B, C, N), self.randn(B, C, N)
                refs = chunk_vjp(*vals, h0.astype(np.float64), sp, dy, dhe.astype(np.float64),
                                 ddec.astype(np.float64))
                shapes = [a.shape for a in vals]
                for acc in (0, 1):
                    pre = [store(self.randn(*s), dt) for s in shapes]
                    outs = [p[0].copy() if acc else poisoned(s, dt) for p, s in zip(pre, shapes)]
                    pre_h = self.randn(B, C, N)
                    dh0 = pre_h.copy() if acc else poisoned((B, C, N), F32)
                    call("braid_k_selective_scan_chunk_grad", dt, *ins, h0, dys, dhe, ddec, *outs,
                         dh0, scan(B, 7, C, N, int(sp)), acc)
                    names = ("dx", "ddelta", "dA", "dB", "dC", "dD")
                    for nm, o, r, p in zip(names, outs, refs, pre):
                        self.close(f"scan_chunk_grad.{nm}", dt, o, r + (p[1] if acc else 0.0),
                                   what + f" accumulate={acc}")
                    self.close("scan_chunk_grad.dh0", F32, dh0, refs[6] + (pre_h if acc else 0.0),
                               what + f" accumulate={acc}")

    def test_scan_carry(self):
        for P, count in ((1, 5), (3, 8), (4, 48)):
            dec = np.exp(-np.abs(self.randn(P, count)))
            he, dh0_all = self.randn(P, count), self.randn(P, count)
            rh0 = carry_fwd(dec.astype(np.float64), he.astype(np.float64))
            rdd, rdh = carry_vjp(dec.astype(np.float64), he.astype(np.float64),
                                 dh0_all.astype(np.float64))
            for c in range(P):
                h0, dd, dh = (poisoned(count, F32) for _ in range(3))
                call("braid_k_scan_carry", dec, he, h0, P, c, count)
                self.close("scan_carry", F32, h0, rh0[c], floor=1.0)
                call("braid_k_scan_carry_grad", dec, he, dh0_all, dd, dh, P, c, count)
                self.close("scan_carry_grad.ddecay", F32, dd, rdd[c], floor=1.0)
                self.close("scan_carry_grad.dhend", F32, dh, rdh[c], floor=1.0)


# --- the engine's composition over chunks = the whole sequence -------------------------------

def conv_chunks(x, w, b, dy, split, skip_accumulate=False):
    """(y, dx, dw, db) of the chunked conv, as an engine runs it (f32 kernels)."""
    ys, dxs, dhalos, dw, db = [], [], [], np.zeros((C, K)), np.zeros(C)
    for s0, s1 in bounds(split):
        n = s1 - s0
        halo = np.zeros((B, K - 1, C), np.float32)
        lo = max(0, s0 - (K - 1))
        halo[:, K - 1 - (s0 - lo):] = x[:, lo:s0]
        xc, dyc = np.ascontiguousarray(x[:, s0:s1]), np.ascontiguousarray(dy[:, s0:s1])
        y = poisoned((B, n, C), F32)
        call("braid_k_conv1d_halo", F32, xc, halo, w, b, y, B, n, C, K)
        dx, dwc, dbc, dh = (poisoned(s, F32) for s in ((B, n, C), (C, K), (C,), (B, K - 1, C)))
        call("braid_k_conv1d_halo_grad", F32, xc, halo, w, dyc, dx, dwc, dbc if b is not None else None,
             dh, B, n, C, K)
        ys.append(y)
        dxs.append(dx)
        dhalos.append(dh)
        dw += dwc
        db += dbc if b is not None else 0.0
    if not skip_accumulate:
        for c in range(len(split) - 1):
            call("braid_k_conv1d_halo_accumulate", F32, dxs[c], dhalos[c + 1], B, split[c], C, K)
    return np.concatenate(ys, 1), np.concatenate(dxs, 1), dw, db


def scan_chunks(ins, dy, sp, split, skip_carry=False, skip_second=False):
    """(y, dx, ddelta, dA, dB, dC, dD) of the chunked scan, as an engine runs it."""
    x, dl, A, Bm, Cm, Dp = ins
    P, count = len(split), B * C * N
    pieces = []
    for s0, s1 in bounds(split):
        pieces.append([np.ascontiguousarray(a[:, s0:s1]) for a in (x, dl)] + [A] +
                      [np.ascontiguousarray(a[:, s0:s1]) for a in (Bm, Cm)] + [Dp])
    # Forward pass 1: zero-start h_end, decay; carry; pass 2: y from h0.
    dec_all, he_all = np.zeros((P, count), np.float32), np.zeros((P, count), np.float32)
    for c, (s0, s1) in enumerate(bounds(split)):
        he, dec = poisoned((B, C, N), F32), poisoned((B, C, N), F32)
        call("braid_k_selective_scan_chunk", F32, *pieces[c], None, None, he, dec,
             scan(B, s1 - s0, C, N, int(sp)))
        dec_all[c], he_all[c] = dec.ravel(), he.ravel()
    h0s, ys = [], []
    for c, (s0, s1) in enumerate(bounds(split)):
        h0 = poisoned((B, C, N), F32)
        call("braid_k_scan_carry", dec_all, he_all, h0, P, c, count)
        h0s.append(h0)
        y = poisoned((B, s1 - s0, C), F32)
        call("braid_k_selective_scan_chunk", F32, *pieces[c], None if skip_carry else h0, y, None,
             None, scan(B, s1 - s0, C, N, int(sp)))
        ys.append(y)
    # Backward: y's VJP from h0 (gives dh0), the carry's VJP, then (h_end, decay)'s.
    grads, dh0_all = [], np.zeros((P, count), np.float32)
    for c, (s0, s1) in enumerate(bounds(split)):
        outs = [poisoned(a.shape, F32) for a in pieces[c]]
        dh0 = poisoned((B, C, N), F32)
        dyc = np.ascontiguousarray(dy[:, s0:s1])
        call("braid_k_selective_scan_chunk_grad", F32, *pieces[c], h0s[c], dyc, None, None, *outs,
             dh0, scan(B, s1 - s0, C, N, int(sp)), 0)
        grads.append(outs)
        dh0_all[c] = dh0.ravel()
    for c, (s0, s1) in enumerate(bounds(split)):
        ddec, dhe = poisoned((B, C, N), F32), poisoned((B, C, N), F32)
        call("braid_k_scan_carry_grad", dec_all, he_all, dh0_all, ddec, dhe, P, c, count)
        if not skip_second:
            call("braid_k_selective_scan_chunk_grad", F32, *pieces[c], None, None, dhe, ddec,
                 *grads[c], None, scan(B, s1 - s0, C, N, int(sp)), 1)
    cat = [np.concatenate([g[i] for g in grads], 1) for i in (0, 1, 3, 4)]
    dA = sum(g[2].astype(np.float64) for g in grads)
    dD = sum(g[5].astype(np.float64) for g in grads)
    return np.concatenate(ys, 1), cat[0], cat[1], dA, cat[2], cat[3], dD


class Chunked(Case):
    def test_conv(self):
        for with_bias in (True, False):
            x, w, b, dy = self.randn(B, S, C), self.randn(C, K), self.randn(C), self.randn(B, S, C)
            bb = b if with_bias else None
            x64, w64, dy64 = (a.astype(np.float64) for a in (x, w, dy))
            ry = conv_fwd(x64, w64, bb.astype(np.float64) if with_bias else None)
            rdx, rdw, rdb = conv_vjp(x64, w64, dy64)
            yk = np.zeros_like(x)
            call("braid_k_conv1d", F32, x, w, bb, yk, B, S, C, K)
            self.fwd_close("conv1d", yk, ry)
            for split in SPLITS:
                what = f" split={split} bias={with_bias}"
                y, dx, dw, db = conv_chunks(x, w, bb, dy, split)
                self.close("chunked conv1d.y", F32, y, ry, what)
                self.close("chunked conv1d.dx", F32, dx, rdx, what)
                self.close("chunked conv1d.dw", F32, dw.astype(np.float32), rdw, what)
                if with_bias:
                    self.close("chunked conv1d.db", F32, db.astype(np.float32), rdb, what)
                if len(split) > 1:
                    _, bad, _, _ = conv_chunks(x, w, bb, dy, split, skip_accumulate=True)
                    self.assertGreater(rel(bad, rdx), 1e-2, "skipping halo_accumulate went unseen")

    def test_scan(self):
        for sp in (False, True):
            ins = self.scan_inputs(sp)
            dy = self.randn(B, S, C)
            vals = [a.astype(np.float64) for a in ins]
            z = np.zeros((B, C, N))
            ry = chunk_fwd(*vals, z, sp)[0]
            refs = chunk_vjp(*vals, z, sp, dy.astype(np.float64), z, z)[:6]
            yk = np.zeros_like(ins[0])
            call("braid_k_selective_scan", F32, *ins, yk, scan(B, S, C, N, int(sp)))
            self.fwd_close("selective_scan", yk, ry)
            outs = [np.zeros_like(a) for a in ins]
            call("braid_k_selective_scan_grad", F32, *ins, dy, *outs, scan(B, S, C, N, int(sp)))
            for nm, o, r in zip(("dx", "ddelta", "dA", "dB", "dC", "dD"), outs, refs):
                self.close(f"selective_scan_grad.{nm}", F32, o, r, f" softplus={sp}")
            for split in SPLITS:
                what = f" split={split} softplus={sp}"
                got = scan_chunks(ins, dy, sp, split)
                self.close("chunked scan.y", F32, got[0], ry, what)
                for nm, o, r in zip(("dx", "ddelta", "dA", "dB", "dC", "dD"), got[1:], refs):
                    self.close(f"chunked scan.{nm}", F32, np.asarray(o, np.float32), r, what)
                if len(split) > 1:
                    bad = scan_chunks(ins, dy, sp, split, skip_carry=True)[0]
                    self.assertGreater(rel(bad, ry), 1e-2, "skipping scan_carry went unseen")
                    bad = scan_chunks(ins, dy, sp, split, skip_second=True)[2]
                    self.assertGreater(rel(bad, refs[1]), 1e-2,
                                       "skipping the (h_end, decay) VJP went unseen")


if __name__ == "__main__":
    main("cpu-mamba-chunk.py", width=32)
