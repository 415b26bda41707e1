# The CPU SPMD kernels of runtime/src/cpu (spmd.cpp: embedding_shard,
# embedding_grad_shard, bias_add, ce_shard_max / stats / loss / grad, slice,
# unslice) against float64 references written here with numpy (independent
# of the kernels and of test/lib/braid_ref). spmd.cpp is compiled here with
# the host compiler, so the test does not depend on the CMake wiring; the
# harness (library loading, storage types, errors) is Inputs/kernel_harness.py.
#
# RUN: %ctypes_cxx -std=c++17 -O1 -fPIC -shared -I%braid_src/runtime/include %braid_src/runtime/src/cpu/spmd.cpp -o %t.so
# RUN: %ctypes_python %s %t.so
#
# Shards follow braid_tensor_desc: a dimension of global size V split over n
# ranks is ceil(V / n) per rank, rank c holding global indices
# [c * local, (c + 1) * local); indices >= V are padding. Padding logits are
# filled with large values (and padding table rows with garbage) so that a
# kernel that reads them shows.
#
# Bounds: rel(a, b) = max|a - b| / max|b| per tensor, b the float64 reference
# on the stored inputs.
# - Data movement (embedding_shard, slice, unslice), row maxima and the label
#   logit of ce_shard_stats: bit-exact.
# - The exp sums of ce_shard_stats, the loss and (f32 storage) the gradient,
#   1e-6: the kernels sum in double and store f32 (2^-24 relative), the
#   gradient also divides by the f32-rounded sum (another 2^-24).
# - The sharded loss assembled with numpy all-reduces against the unsharded
#   mean cross-entropy, 1e-6: row maxima are exact, the f32 stats carry
#   2^-24 relative each, i.e. ~1e-7 absolute on a loss of ~log V.
# - embedding_grad_shard, bias_add and the gradient in bf16 / f16: the store
#   rounding, TOL of the harness (2^-8 bf16, 2^-10 f16, 1e-5 f32 with the
#   double sums of repeated tokens).

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))

import numpy as np  # noqa: E402

import kernel_harness  # noqa: E402
from kernel_harness import (BF16, DTN, DTYPES, F16, F32, I32, I64, MAX_ERR,  # noqa: E402
                            TOL, I, I4, P, call, declare, main, poisoned, rel, store, values)

RNG = np.random.default_rng(90210)

declare([], {
    "braid_k_embedding_shard": [P, I4, I4, P, P, P, I, I, I, I],
    "braid_k_embedding_grad_shard": [P, I4, I4, P, P, P, I, I, I, I],
    "braid_k_bias_add": [P, I4, P, P, P, I, I],
    "braid_k_ce_shard_max": [P, I4, P, P, I, I, I, I],
    "braid_k_ce_shard_stats": [P, I4, I4, P, P, P, P, I, I, I, I],
    "braid_k_ce_shard_loss": [P, P, P, P, I, I],
    "braid_k_ce_shard_grad": [P, I4, I4, P, P, P, P, P, P, I, I, I, I, I],
    "braid_k_slice": [P, I4, P, P, I, I, I, I, I],
    "braid_k_unslice": [P, I4, P, P, I, I, I, I, I],
})

NPINT = {I32: np.int32, I64: np.int64}
NPBITS = {F32: np.float32, BF16: np.uint16, F16: np.float16, I32: np.int32, I64: np.int64}
ALL_DTYPES = (F32, BF16, F16, I32, I64)
ALL_DTN = {**DTN, I32: "i32", I64: "i64"}


class Case(kernel_harness.Case):
    rng = RNG

    def bits_equal(self, got, expect, what):
        """Bit-exact comparison (signed zeros and infinities included)."""
        got, expect = np.ascontiguousarray(got), np.ascontiguousarray(expect)
        self.assertEqual(got.shape, expect.shape, what)
        self.assertEqual(got.dtype.itemsize, expect.dtype.itemsize, what)
        uint = np.dtype(f"u{got.dtype.itemsize}")
        bad = np.flatnonzero(got.reshape(-1).view(uint) != expect.reshape(-1).view(uint))
        if bad.size:
            self.fail(f"{what}: {bad.size} of {got.size} elements differ, first at flat "
                      f"{bad[:8].tolist()}: got {got.reshape(-1)[bad[:8]].tolist()}, "
                      f"expected {expect.reshape(-1)[bad[:8]].tolist()}")

    def guarded(self, shape, dt, poison=poisoned):
        """(a poisoned output, check(what)): check fails if the kernel wrote into
        the poisoned elements that follow the output in memory."""
        size = int(np.prod(shape))
        flat = poison((size + 64,), dt)
        tail = flat[size:].copy()
        return flat[:size].reshape(shape), lambda what: self.bits_equal(
            flat[size:], tail, f"{what}: written past the end of the output")

    def err_le(self, kernel, dt, err, tol, what):
        key = (kernel, ALL_DTN[dt])
        MAX_ERR[key] = max(MAX_ERR.get(key, 0.0), err)
        self.assertLessEqual(err, tol, f"{kernel} {ALL_DTN[dt]}{what}: rel error {err:.3g}")


def shard_layout(V, n):
    """(local size, [offset of each rank])."""
    local = -(-V // n)
    return local, [c * local for c in range(n)]


def pad_cols(x, width, fill):
    """x [rows, V] -> [rows, width] with `fill` in the padding columns."""
    out = np.full((x.shape[0], width), fill, dtype=x.dtype)
    out[:, :x.shape[1]] = x
    return out


# --- embedding ------------------------------------------------------------------------------

class Embedding(Case):
    CASES = ((23, 4, 5, 40), (23, 1, 3, 7), (9, 4, 2, 11), (97, 2, 17, 64), (5, 8, 4, 6))

    def test_embedding_shard(self):
        for dt in DTYPES:
            for index_dt in (I32, I64):
                for V, n, H, T in self.CASES:
                    local, offsets = shard_layout(V, n)
                    table = self.randn(n * local, H)
                    table[V:] = 0.0  # padding rows are zero (braid_tensor_desc)
                    ts, tv = store(table, dt)
                    # Tokens of every shard plus ids no shard holds: those give 0 everywhere.
                    tok = RNG.integers(0, V, T)
                    tok[:3] = [-1, n * local, V - 1]
                    tok = tok.astype(NPINT[index_dt])
                    total = np.zeros((T, H), dtype=np.float64)
                    for off in offsets:
                        out, guard = self.guarded((T, H), dt)
                        call("braid_k_embedding_shard", dt, index_dt, tok,
                             np.ascontiguousarray(ts[off:off + local]), out, T, local, H, off)
                        guard("embedding_shard")
                        mine = (tok >= off) & (tok < off + local)
                        expect = np.zeros((T, H), dtype=ts.dtype)
                        expect[mine] = ts[tok[mine]]
                        self.bits_equal(out, expect,
                                        f"embedding_shard {DTN[dt]} V={V} n={n} offset={off}")
                        total += values(out, dt)
                    ref = np.zeros((T, H))
                    ok = (tok >= 0) & (tok < V)
                    ref[ok] = tv[tok[ok]]
                    np.testing.assert_array_equal(total, ref, err_msg=f"sum over {n} shards")

    def test_embedding_grad_shard(self):
        for dt in DTYPES:
            for index_dt in (I32, I64):
                for V, n, H, T in self.CASES:
                    local, offsets = shard_layout(V, n)
                    # Few distinct ids: most tokens repeat.
                    tok = RNG.integers(0, min(V, 7), T) * max(1, V // 7)
                    tok = np.minimum(tok, V - 1)
                    tok[:2] = [-1, n * local]  # held by no shard: skipped everywhere
                    tok = tok.astype(NPINT[index_dt])
                    dys, dyv = store(self.randn(T, H), dt)
                    full = np.zeros((n * local, H))
                    np.add.at(full, tok[2:].astype(np.int64), dyv[2:].astype(np.float64))
                    for off in offsets:
                        dtab, guard = self.guarded((local, H), dt)
                        call("braid_k_embedding_grad_shard", dt, index_dt, tok, dys, dtab, T,
                             local, H, off)
                        guard("embedding_grad_shard")
                        self.close("embedding_grad_shard", dt, dtab, full[off:off + local],
                                   f" V={V} n={n} offset={off}", floor=1.0)
                        # Rows no token of this shard hits are exactly 0.
                        untouched = np.ones(local, dtype=bool)
                        for t in tok:
                            if off <= t < off + local:
                                untouched[t - off] = False
                        self.assertTrue(np.all(values(dtab, dt)[untouched] == 0.0),
                                        f"embedding_grad_shard offset={off}: untouched rows")

    def test_embedding_grad_shard_no_tokens(self):
        dtab = poisoned((3, 4), F32)
        call("braid_k_embedding_grad_shard", F32, I32, np.zeros(1, np.int32),
             np.zeros((1, 4), np.float32), dtab, 0, 3, 4, 6)
        self.bits_equal(dtab, np.zeros((3, 4), np.float32), "embedding_grad_shard, 0 tokens")


class BiasAdd(Case):
    def test_bias_add(self):
        for dt in DTYPES:
            for rows, nb in ((1, 1), (7, 13), (32, 64), (3, 1)):
                xs, xv = store(self.randn(rows, nb), dt)
                bs, bv = store(self.randn(nb), dt)
                y = poisoned((rows, nb), dt)
                call("braid_k_bias_add", dt, xs, bs, y, rows * nb, nb)
                ref = xv.astype(np.float64) + bv.astype(np.float64)[None, :]
                self.close("bias_add", dt, y, ref, f" {rows}x{nb}")
                if dt == F32:  # one f32 addition per element: exact against numpy's
                    self.bits_equal(y, xv + bv[None, :], f"bias_add f32 {rows}x{nb}")


# --- vocabulary-parallel cross-entropy ------------------------------------------------------

PAD_LOGIT = 1.0e3  # exp(PAD_LOGIT - max) overflows: a padding column read shows


def ce_reference(x, lab):
    """Unsharded float64 mean cross-entropy and its gradient (dloss = 1)."""
    x = x.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    s = e.sum(axis=1, keepdims=True)
    rows = np.arange(x.shape[0])
    loss = float(np.mean(m[:, 0] + np.log(s[:, 0]) - x[rows, lab]))
    grad = e / s
    grad[rows, lab] -= 1.0
    return loss, grad / x.shape[0]


class CrossEntropy(Case):
    def logits(self, rows, V, n, dt, scale=3.0):
        """(stored [rows, n * local] with padding, f32 values of the real part, local)."""
        local, _ = shard_layout(V, n)
        xs, xv = store(self.randn(rows, V, scale=scale), dt)
        pad = store(np.full((1, 1), PAD_LOGIT, np.float32), dt)[0][0, 0]
        return pad_cols(xs, n * local, pad), xv, local

    def test_max(self):
        for dt in DTYPES:
            for rows, V, n in ((5, 97, 4), (3, 9, 4), (1, 1, 1), (6, 13, 5)):
                xs, xv, local = self.logits(rows, V, n, dt)
                for c in range(n):
                    off = c * local
                    part = np.ascontiguousarray(xs[:, off:off + local])
                    mx = np.full(rows, np.nan, np.float32)
                    call("braid_k_ce_shard_max", dt, part, mx, rows, local, off, V)
                    real = xv[:, off:min(off + local, V)]
                    expect = (real.max(axis=1) if real.shape[1] else
                              np.full(rows, -np.inf, np.float32))
                    self.bits_equal(mx, expect.astype(np.float32),
                                    f"ce_shard_max {DTN[dt]} V={V} n={n} rank {c}")

    def test_stats(self):
        for dt in DTYPES:
            for index_dt in (I32, I64):
                for rows, V, n in ((8, 97, 4), (4, 9, 4), (6, 13, 5), (3, 97, 1)):
                    xs, xv, local = self.logits(rows, V, n, dt)
                    lab = RNG.integers(0, V, rows).astype(NPINT[index_dt])
                    # Any row maximum works (the kernels use the one they are given); the
                    # real one keeps the exponentials in range.
                    M = xv.max(axis=1).astype(np.float32)
                    for c in range(n):
                        off = c * local
                        part = np.ascontiguousarray(xs[:, off:off + local])
                        st = np.full((rows, 2), np.nan, np.float32)
                        call("braid_k_ce_shard_stats", dt, index_dt, part, lab, M, st, rows,
                             local, off, V)
                        real = xv[:, off:min(off + local, V)].astype(np.float64)
                        s0 = np.exp(real - M[:, None].astype(np.float64)).sum(axis=1)
                        what = f" V={V} n={n} rank {c}"
                        if real.shape[1] == 0:
                            self.bits_equal(st[:, 0], np.zeros(rows, np.float32),
                                            "ce_shard_stats sum of an all-padding shard" + what)
                        else:
                            self.err_le("ce_shard_stats", dt, rel(st[:, 0], s0), 1e-6,
                                        " exp sum" + what)
                        local_lab = (lab >= off) & (lab < off + local)
                        s1 = np.where(local_lab, xv[np.arange(rows), lab], 0.0)
                        self.bits_equal(st[:, 1], s1.astype(np.float32),
                                        f"ce_shard_stats {DTN[dt]} label logit" + what)

    def test_loss(self):
        for rows, denom in ((1, 1), (16, 16), (16, 64), (0, 3)):
            M = self.randn(rows, scale=4.0)
            st = np.stack([np.exp(self.randn(rows)) + 0.5, self.randn(rows)], axis=1)
            st = np.ascontiguousarray(st, dtype=np.float32)
            loss = np.full((), np.nan, np.float32)
            call("braid_k_ce_shard_loss", M, st, loss, rows, denom)
            ref = float(np.sum(M.astype(np.float64) + np.log(st[:, 0].astype(np.float64)) -
                               st[:, 1].astype(np.float64)) / denom)
            self.err_le("ce_shard_loss", F32, rel(loss, ref, floor=1e-30 if rows else 1.0),
                        1e-6, f" rows={rows} denominator={denom}")

    def test_grad_pieces(self):
        """ce_shard_grad on given (reduced) statistics, shard by shard."""
        for dt in DTYPES:
            for index_dt in (I32, I64):
                for rows, V, n in ((8, 97, 4), (4, 9, 4), (6, 13, 5)):
                    xs, xv, local = self.logits(rows, V, n, dt)
                    lab = RNG.integers(0, V, rows).astype(NPINT[index_dt])
                    x64 = xv.astype(np.float64)
                    M = xv.max(axis=1).astype(np.float32)
                    S = np.exp(x64 - M[:, None]).sum(axis=1).astype(np.float32)
                    st = np.ascontiguousarray(np.stack([S, np.zeros(rows, np.float32)], axis=1))
                    dloss = np.array(0.75, np.float32)
                    denom = 3 * rows  # e.g. rows of other data-parallel ranks
                    for c in range(n):
                        off = c * local
                        part = np.ascontiguousarray(xs[:, off:off + local])
                        dx, guard = self.guarded((rows, local), dt)
                        call("braid_k_ce_shard_grad", dt, index_dt, part, lab, M, st, dloss, dx,
                             rows, local, off, V, denom)
                        guard("ce_shard_grad")
                        ncols = max(0, min(local, V - off))
                        p = np.exp(x64[:, off:off + ncols] - M[:, None]) / S[:, None]
                        hit = lab.astype(np.int64)[:, None] == off + np.arange(ncols)[None, :]
                        ref = 0.75 / denom * (p - hit)
                        got = values(dx, dt)
                        what = f" V={V} n={n} rank {c}"
                        self.assertTrue(np.all(got[:, ncols:] == 0.0),
                                        f"ce_shard_grad {DTN[dt]}{what}: padding columns not 0: "
                                        f"{got[:, ncols:]}")
                        if ncols:
                            self.close("ce_shard_grad", dt, dx[:, :ncols], ref, what,
                                       tol=1e-6 if dt == F32 else None)

    def test_sharded_equals_unsharded(self):
        """The three passes with numpy all-reduces between them, and the gradient
        assembled from the shards, against the unsharded numpy cross-entropy."""
        for dt in DTYPES:
            for index_dt in (I32, I64):
                for rows, V, n in ((16, 97, 1), (16, 97, 2), (16, 97, 4), (16, 97, 12),
                                   (5, 9, 4), (3, 1, 2)):
                    what = f" {rows}x{V} over {n} shards"
                    xs, xv, local = self.logits(rows, V, n, dt)
                    lab = RNG.integers(0, V, rows).astype(NPINT[index_dt])
                    # Rows whose label lies in the last rank with real columns and in rank 0.
                    lab[0], lab[-1] = V - 1, 0
                    offsets = [c * local for c in range(n)]
                    parts = [np.ascontiguousarray(xs[:, o:o + local]) for o in offsets]

                    maxes = []
                    for part, off in zip(parts, offsets):
                        mx = np.full(rows, np.nan, np.float32)
                        call("braid_k_ce_shard_max", dt, part, mx, rows, local, off, V)
                        maxes.append(mx)
                    M = np.maximum.reduce(maxes)  # all-reduce max
                    if n * local - local >= V:   # the last rank holds only padding
                        self.assertTrue(np.all(maxes[-1] == -np.inf),
                                        f"all-padding max {DTN[dt]}" + what)

                    stats = []
                    for part, off in zip(parts, offsets):
                        st = np.full((rows, 2), np.nan, np.float32)
                        call("braid_k_ce_shard_stats", dt, index_dt, part, lab, M, st, rows,
                             local, off, V)
                        stats.append(st)
                    S = np.sum(stats, axis=0, dtype=np.float32)  # all-reduce sum

                    ref_loss, ref_grad = ce_reference(xv, lab)
                    loss = np.full((), np.nan, np.float32)  # the same on every rank
                    call("braid_k_ce_shard_loss", M, S, loss, rows, rows)
                    self.err_le("sharded loss", dt, rel(loss, ref_loss), 1e-6,
                                f"{what} (loss {float(loss)!r}, numpy {ref_loss!r})")

                    dloss = np.array(1.0, np.float32)
                    grads = []
                    for part, off in zip(parts, offsets):
                        dx = poisoned((rows, local), dt)
                        call("braid_k_ce_shard_grad", dt, index_dt, part, lab, M, S, dloss, dx,
                             rows, local, off, V, rows)
                        grads.append(values(dx, dt))
                    full = np.concatenate(grads, axis=1)
                    self.assertTrue(np.all(full[:, V:] == 0.0),
                                    f"gradient padding {DTN[dt]}" + what)
                    err = rel(full[:, :V], ref_grad)
                    self.err_le("sharded grad", dt, err, 1e-6 if dt == F32 else TOL[dt], what)


# --- slice / unslice ------------------------------------------------------------------------

def random_bits(shape, dt):
    if dt in (I32, I64):
        return RNG.integers(-2**30, 2**30, shape).astype(NPBITS[dt])
    if dt == F32:
        return RNG.standard_normal(shape).astype(np.float32)
    # bf16 / f16: any bits but NaNs' (kept for simplicity of the comparisons)
    b = RNG.integers(0, 0x7C00, shape).astype(np.uint16) | (RNG.integers(0, 2, shape)
                                                          .astype(np.uint16) << 15)
    return b if dt == BF16 else b.view(np.float16)


def poisoned_bits(shape, dt):
    """All-ones bits (NaN or -1): elements a kernel leaves unwritten show."""
    size = int(np.prod(shape)) * np.dtype(NPBITS[dt]).itemsize
    return np.full(size, 0xFF, np.uint8).view(NPBITS[dt]).reshape(shape)


class Slice(Case):
    SHAPES = ((3, 10, 4, 4), (3, 10, 4, 3), (2, 9, 5, 4), (1, 7, 1, 1), (4, 5, 1, 8),
              (2, 6, 3, 2))  # (outer, dim, inner, ranks)

    def test_slice_unslice(self):
        for dt in ALL_DTYPES:
            for outer, dim, inner, n in self.SHAPES:
                local = -(-dim // n)
                x = random_bits((outer, dim, inner), dt)
                padded = np.zeros((outer, n * local, inner), x.dtype)
                padded[:, :dim] = x
                total = np.zeros((outer, dim, inner), np.float64)
                for c in range(n):
                    start = c * local
                    what = f" {ALL_DTN[dt]} [{outer}, {dim}, {inner}] rank {c} of {n}"
                    y, guard = self.guarded((outer, local, inner), dt, poisoned_bits)
                    call("braid_k_slice", dt, x, y, outer, dim, local, inner, start)
                    guard("slice" + what)
                    self.bits_equal(y, padded[:, start:start + local], "slice" + what)

                    xl = random_bits((outer, local, inner), dt)
                    z, guard = self.guarded((outer, dim, inner), dt, poisoned_bits)
                    call("braid_k_unslice", dt, xl, z, outer, dim, local, inner, start)
                    guard("unslice" + what)
                    expect = np.zeros((outer, n * local, inner), x.dtype)
                    expect[:, start:start + local] = xl
                    self.bits_equal(z, np.ascontiguousarray(expect[:, :dim]), "unslice" + what)

                    if dt == F32:
                        # The adjoint: <slice(x), w> = <x, unslice(w)>.
                        lhs = float(np.sum(y.astype(np.float64) * xl.astype(np.float64)))
                        rhs = float(np.sum(x.astype(np.float64) * z.astype(np.float64)))
                        self.assertAlmostEqual(lhs, rhs, places=9, msg="adjoint" + what)
                        # Unslicing every rank's slice and summing gives x back.
                        u = poisoned_bits((outer, dim, inner), dt)
                        call("braid_k_unslice", dt, y, u, outer, dim, local, inner, start)
                        total += u
                if dt == F32:
                    np.testing.assert_array_equal(total, x, err_msg=f"sum of unslices, n={n}")


# --- errors of the program abort with a message ---------------------------------------------

ABORT_SCRIPT = r"""
import ctypes, sys
import numpy as np
lib = ctypes.CDLL(sys.argv[1])
P, I, I4 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
z = np.zeros(64, np.float32).ctypes.data
which = sys.argv[2]
if which == "stats":
    lab = np.array([1, 9], dtype=np.int64)
    lib.braid_k_ce_shard_stats.argtypes = [P, I4, I4, P, P, P, P, I, I, I, I]
    lib.braid_k_ce_shard_stats(None, 0, 4, z, lab.ctypes.data, z, z, 2, 3, 6, 9)
elif which == "grad":
    lab = np.array([-2], dtype=np.int32)
    lib.braid_k_ce_shard_grad.argtypes = [P, I4, I4, P, P, P, P, P, P, I, I, I, I, I]
    lib.braid_k_ce_shard_grad(None, 0, 3, z, lab.ctypes.data, z, z, z, z, 1, 3, 0, 9, 1)
elif which == "bias_add":
    lib.braid_k_bias_add.argtypes = [P, I4, P, P, P, I, I]
    lib.braid_k_bias_add(None, 0, z, z, z, 10, 4)
print("returned")
"""


class Aborts(Case):
    def test_errors(self):
        self.check_aborts(ABORT_SCRIPT, (
            ("stats", "braid: ce_shard_stats: label 9 of row 1 is outside [0, 9)"),
            ("grad", "braid: ce_shard_grad: label -2 of row 0 is outside [0, 9)"),
            ("bias_add", "braid: bias_add: 10 elements are not a whole number of bias vectors")))


if __name__ == "__main__":
    main("cpu-spmd.py", width=22)
