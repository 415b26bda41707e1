"""The paged KV cache kernels (runtime_inference.h: braid_k_paged_cache_write,
braid_k_paged_cache_attention, and braid_k_take_rows' -1) against
braid_ref.ops_inference, on the CPU (test/Kernels/cpu-cache.py) and on the
CUDA kernels under cudasim (test/Cuda/cudasim-paged-cache.py).

Usage: paged_cache_cases.py KERNELS.so [--device] [abort CASE]
(as cache_cases.py, whose calls and device copies it shares).

Bounds (rel = max|a - b| / max|b| per tensor, harness.rel):
- against the float64 reference on the same stored inputs: kernel_harness.TOL
  (f32 1e-5, bf16 2^-8, f16 2^-10), as cache_cases.py;
- against the unpaged kernels with P = C, N = B, pages[b] = [b], last_rows =
  S - 1: bit for bit (one core: only the row addresses differ);
- against the unpaged kernels over the same rows gathered from a shuffled
  page table, f32: 1e-6 (the keys are taken a page at a time, so only the order
  of f32 sums may differ);
- data movement (a write without RoPE, the rows no call writes, padding and
  idle outputs, take_rows' -1): bit for bit.
"""

import math
import os
import sys
import ctypes

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from braid_ref import ops_inference  # noqa: E402
import kernel_harness  # noqa: E402
from kernel_harness import BF16, DTYPES, F32, I, I4, LIB, P, D, rel, values  # noqa: E402
import cache_cases  # noqa: E402  (its kernels' signatures, call() and the device copies)
from cache_cases import cache_attention, cache_write, call, i32  # noqa: E402

DEVICE = cache_cases.DEVICE
RNG = np.random.default_rng(4343)


class PagedShape(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int64) for n in (
        "batch", "seq", "pages", "page_size", "pages_per_seq", "heads", "kv_heads", "head_dim",
        "v_head_dim")] + [("scale", ctypes.c_double), ("rope_theta", ctypes.c_double)]


SIGS = {
    "braid_k_paged_cache_write": [P, I4, P, P, P, P, P, I, I, I, I, I, I, I, D],
    "braid_k_paged_cache_attention": [P, I4, P, P, P, P, P, P, P, ctypes.POINTER(PagedShape)],
}
if LIB is not None:
    for name, args in SIGS.items():
        getattr(LIB, name).argtypes = args
        getattr(LIB, name).restype = None


def paged_write(dt, pool, rows, positions, pages, last_rows, theta):
    n, size, h, d = pool.shape
    b, s = rows.shape[:2]
    pages = i32(pages)
    call("braid_k_paged_cache_write", dt, pool, rows, i32(positions), pages, i32(last_rows), b, s,
         n, size, pages.shape[1], h, d, theta or 0.0)


def paged_attention(dt, q, kp, vp, positions, pages, last_rows, scale, theta):
    b, s, hq, d = q.shape
    n, size, hkv = kp.shape[:3]
    dv = vp.shape[3]
    pages = i32(pages)
    out = kernel_harness.poisoned((b, s, hq, dv), dt)
    shape = PagedShape(b, s, n, size, pages.shape[1], hq, hkv, d, dv, scale, theta or 0.0)
    call("braid_k_paged_cache_attention", dt, q, kp, vp, i32(positions), pages, i32(last_rows),
         out, ctypes.byref(shape))
    return out


def page_table(rng, b, t, n):
    """[b, t] distinct pages of n, shuffled (every sequence's pages scattered)."""
    return rng.permutation(n)[:b * t].reshape(b, t)


class Case(cache_cases.Case):
    rng = RNG


# (batch, seq, pages N, page size P, pages per sequence T, heads, kv heads, D, Dv, theta,
#  positions, last_rows)
ATTENTION_CASES = [
    (3, 1, 12, 4, 3, 4, 2, 8, 8, None, [3, 0, 11], [0, 0, 0]),      # decode, GQA
    (3, 1, 12, 4, 3, 4, 2, 8, 8, 1e4, [3, 0, 11], [0, -1, 0]),      # an idle sequence
    (2, 3, 16, 4, 5, 4, 2, 16, 6, 5e5, [4, 17], [2, 1]),            # a chunk, padding row
    (1, 70, 24, 8, 12, 2, 1, 8, 8, 1e4, [9], [66]),                 # past one GEMM block
    (2, 5, 10, 3, 4, 8, 2, 4, 4, 1e4, [0, 6], [4, -1]),             # page size 3, group 4
    (1, 70, 4, 256, 2, 2, 1, 8, 8, 1e4, [230], [69]),               # pages of 256 rows
]


class PagedWrite(Case):
    def test_against_reference(self):
        b, s, n, size, t, h, d = 3, 3, 9, 4, 3, 2, 8
        positions, last_rows = [0, 5, 2], [2, 0, -1]  # whole, one row and padding, idle
        for theta in (None, 1e4):
            for dt in DTYPES:
                pages = page_table(self.rng, b, t, n)
                pool, pool64 = self.stored((n, size, h, d), dt)
                rows, rows64 = self.stored((b, s, h, d), dt)
                before = pool.copy()
                paged_write(dt, pool, rows, positions, pages, last_rows, theta)
                ref = ops_inference.paged_cache_write(pool64, rows64, i32(positions), i32(pages),
                                                      i32(last_rows), theta)
                self.close("paged_cache_write", dt, pool, ref, f" theta={theta}",
                           tol=kernel_harness.TOL[dt] if theta else 0.0)
                written = np.zeros((n, size), bool)
                for i, (p0, last) in enumerate(zip(positions, last_rows)):
                    for p in range(p0, p0 + last + 1):
                        written[pages[i, p // size], p % size] = True
                np.testing.assert_array_equal(pool[~written], before[~written],
                                              "paged_cache_write: rows it must not write changed")

    def test_equals_cache_write(self):
        # P = C, N = B, pages[b] = [b], every row real: braid_k_cache_write.
        b, s, c, h, d = 3, 2, 10, 2, 8
        for dt in DTYPES:
            cache, _ = self.stored((b, c, h, d), dt)
            rows, _ = self.stored((b, s, h, d), dt)
            pool = cache.copy()
            cache_write(dt, cache, rows, [0, 5, 8], 1e4)
            paged_write(dt, pool, rows, [0, 5, 8], [[0], [1], [2]], [s - 1] * b, 1e4)
            np.testing.assert_array_equal(pool, cache)


class PagedAttention(Case):
    def test_against_reference(self):
        for b, s, n, size, t, hq, hkv, d, dv, theta, positions, last_rows in ATTENTION_CASES:
            scale = 1.0 / math.sqrt(d)
            what = (f" b={b} s={s} N={n} P={size} T={t} H={hq}/{hkv} D={d}/{dv} "
                    f"theta={theta} pos={positions} last={last_rows}")
            for dt in DTYPES:
                pages = page_table(self.rng, b, t, n)
                q, q64 = self.stored((b, s, hq, d), dt)
                kp, kp64 = self.stored((n, size, hkv, d), dt)
                vp, vp64 = self.stored((n, size, hkv, dv), dt)
                got = paged_attention(dt, q, kp, vp, positions, pages, last_rows, scale, theta)
                ref = ops_inference.paged_cache_attention(q64, kp64, vp64, i32(positions),
                                                          i32(pages), i32(last_rows), scale,
                                                          theta)
                self.close("paged_cache_attention", dt, got, ref, what)
                for i, last in enumerate(last_rows):  # padding and idle rows: zeros
                    np.testing.assert_array_equal(values(got, dt)[i, last + 1:], 0.0)

    def test_equals_cache_attention(self):
        # P = C, N = B, pages[b] = [b], last_rows = S - 1: braid_k_cache_attention, bit
        # for bit (decode, and a chunk past one GEMM block).
        for b, s, c, hq, hkv, d, positions in ((3, 1, 12, 4, 2, 8, [3, 0, 11]),
                                               (2, 70, 80, 2, 1, 8, [9, 0])):
            for dt in DTYPES:
                q, _ = self.stored((b, s, hq, d), dt)
                kc, _ = self.stored((b, c, hkv, d), dt)
                vc, _ = self.stored((b, c, hkv, d), dt)
                want = cache_attention(dt, q, kc, vc, positions, 0.3, 1e4)
                got = paged_attention(dt, q, kc, vc, positions, [[i] for i in range(b)],
                                      [s - 1] * b, 0.3, 1e4)
                np.testing.assert_array_equal(got, want)

    def test_shuffled_pages_equal_gathered_cache(self):
        # A shuffled page table against braid_k_cache_attention over the same rows
        # gathered into a contiguous cache; NaN in every row no sequence reads.
        b, s, n, size, t, hq, hkv, d = 2, 70, 40, 8, 12, 4, 2, 16
        positions, last_rows = [20, 0], [s - 1, s - 1]
        pages = page_table(self.rng, b, t, n)
        kp, _ = self.stored((n, size, hkv, d), F32)
        vp, _ = self.stored((n, size, hkv, d), F32)
        q, _ = self.stored((b, s, hq, d), F32)
        used = np.zeros((n, size), bool)
        for i, p0 in enumerate(positions):
            for p in range(p0 + s):
                used[pages[i, p // size], p % size] = True
        kp[~used], vp[~used] = np.nan, np.nan
        gather = pages[:, :, None] * size + np.arange(size)[None, None, :]  # [b, t, P]
        kc = kp.reshape(n * size, hkv, d)[gather.reshape(b, t * size)]
        vc = vp.reshape(n * size, hkv, d)[gather.reshape(b, t * size)]
        want = cache_attention(F32, q, np.nan_to_num(kc), np.nan_to_num(vc), positions, 0.25, 1e4)
        for steps in ((s,), (30, 40)):  # one call, then a prompt chunked in two
            got, first = [], 0
            for chunk in steps:
                rows = np.ascontiguousarray(q[:, first:first + chunk])
                got.append(paged_attention(F32, rows, kp, vp, [p + first for p in positions],
                                           pages, [chunk - 1] * b, 0.25, 1e4))
                first += chunk
            got = np.concatenate(got, axis=1)
            self.assertFalse(np.isnan(got).any(), f"steps {steps}: NaN from unread rows")
            err = rel(got, want)
            kernel_harness.MAX_ERR[("paged vs gathered", "f32")] = max(
                kernel_harness.MAX_ERR.get(("paged vs gathered", "f32"), 0.0), err)
            self.assertLessEqual(err, 1e-6, f"steps {steps}: paged vs gathered cache {err:.3g}")

    def test_write_then_decode_bf16(self):
        # Decode through the pages in bf16: each step writes its key and value rows,
        # then attends; against the reference of the whole sequence.
        b, steps, n, size, t, hq, hkv, d = 2, 6, 8, 2, 4, 4, 2, 8
        pages = page_table(self.rng, b, t, n)
        kp, vp = kernel_harness.empty((n, size, hkv, d), BF16), kernel_harness.empty(
            (n, size, hkv, d), BF16)
        q, q64 = self.stored((b, steps, hq, d), BF16)
        k, k64 = self.stored((b, steps, hkv, d), BF16)
        v, v64 = self.stored((b, steps, hkv, d), BF16)
        outs = []
        for i in range(steps):
            row = np.ascontiguousarray
            last = [0, 0 if i < steps - 1 else -1]  # sequence 1 idle at the last step
            paged_write(BF16, kp, row(k[:, i:i + 1]), [i, i], pages, last, 1e4)
            paged_write(BF16, vp, row(v[:, i:i + 1]), [i, i], pages, last, None)
            outs.append(paged_attention(BF16, row(q[:, i:i + 1]), kp, vp, [i, i], pages, last,
                                        0.35, 1e4))
        got = np.concatenate(outs, axis=1)
        from braid_ref import ops
        ref = ops.attention(q64, k64, v64, causal=True, scale=0.35, rope_theta=1e4)
        ref[1, steps - 1] = 0.0
        self.close("paged decode", BF16, got, ref, " bf16 step by step")


class TakeRows(Case):
    def test_idle_row_is_zeros(self):
        for dt in DTYPES:
            x, x64 = self.stored((3, 5, 7), dt)
            index = i32([4, -1, 2])
            out = kernel_harness.poisoned((3, 7), dt)
            call("braid_k_take_rows", dt, x, index, out, 3, 5, 7)
            np.testing.assert_array_equal(values(out, dt), ops_inference.take_rows(x64, index))
            np.testing.assert_array_equal(values(out, dt)[1], 0.0)


# --- fatal errors ------------------------------------------------------------

def abort_case(which):
    """One call with a bad page, position or last row (run in a child process)."""
    pool = np.zeros((4, 2, 2, 4), np.float32)  # pools [N=4, P=2, 2, 4]
    rows = np.zeros((2, 2, 2, 4), np.float32)
    q = np.zeros((2, 2, 2, 4), np.float32)
    pages = [[0, 1, 2], [3, 9, -1]]  # T=3: positions [0, 6); sequence 1's page 1 bad
    if which == "write_bad_page":        # sequence 1 writes positions 1..2: page 9
        paged_write(F32, pool, rows, [0, 1], pages, [1, 1], None)
    elif which == "write_past_table":    # sequence 0 writes positions 5..6 of [0, 6)
        paged_write(F32, pool, rows, [5, 0], pages, [1, 0], 1e4)
    elif which == "write_last_row":      # last row 2 of a call of 2 rows
        paged_write(F32, pool, rows, [0, 0], pages, [2, 0], None)
    elif which == "attention_bad_page":  # sequence 1 at 2..3 reads page 9 (positions 2, 3)
        paged_attention(F32, q, pool, pool, [0, 2], pages, [1, 1], 0.5, 1e4)
    elif which == "attention_last_row":  # last row -2
        paged_attention(F32, q, pool, pool, [0, 0], pages, [0, -2], 0.5, None)
    elif which == "take_rows_minus_two":
        x = np.zeros((2, 3, 4), np.float32)
        call("braid_k_take_rows", F32, x, i32([-1, -2]), np.zeros((2, 4), np.float32), 2, 3, 4)
    print("returned")


CPU_MESSAGES = {
    "write_bad_page": "braid: paged_cache_write: sequence 1 writes position 2 in page 9, "
                      "outside the pool's [0, 4)",
    "write_past_table": "braid: paged_cache_write: sequence 0 has positions 5..6, outside its "
                        "page table's [0, 6)",
    "write_last_row": "braid: paged_cache_write: sequence 0 has last row 2, outside [-1, 2)",
    "attention_bad_page": "braid: paged_cache_attention: sequence 1 reads position 2 in page 9, "
                          "outside the pool's [0, 4)",
    "attention_last_row": "braid: paged_cache_attention: sequence 1 has last row -2, outside "
                          "[-1, 2)",
    "take_rows_minus_two": "braid: take_rows: index -2 of sequence 1 is outside [0, 3)",
}
# The CUDA kernels record the first bad value they meet on the device.
DEVICE_MESSAGES = {
    "write_bad_page": "paged_cache_write: page 9 of sequence 1 is out of range [0, 4)",
    "write_past_table": "paged_cache_write: position 6 of sequence 0 is out of range [0, 6)",
    "write_last_row": "paged_cache: last row 2 of sequence 0 is out of range [0, 2)",
    "attention_bad_page": "paged_cache_attention: page 9 of sequence 1 is out of range [0, 4)",
    "attention_last_row": "paged_cache: last row -2 of sequence 1 is out of range [0, 2)",
    "take_rows_minus_two": "take_rows: index -2 of sequence 1 is out of range [0, 3)",
}


class Aborts(Case):
    def test_fatal_errors(self):
        self.check_abort_cases(__file__, DEVICE_MESSAGES if DEVICE else CPU_MESSAGES, DEVICE)


def main():
    kernel_harness.case_main("paged_cache_cases.py", 28, abort_case)


if __name__ == "__main__":
    main()
