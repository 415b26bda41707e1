"""The KV cache and generation kernels (runtime/include/braid/runtime_inference.h)
against braid_ref.ops_inference, on the CPU (test/Kernels/cpu-cache.py) and on the CUDA
kernels under cudasim (test/Cuda/cudasim-cache.py), which differ only in where
the operands live and in the wording of the fatal errors.

Usage: cache_cases.py KERNELS.so [--device] [abort CASE | digest]
  --device    KERNELS.so holds the CUDA kernels and test/Cuda/Inputs/
              device_shim.cpp: every array operand is uploaded to device memory
              before the call and downloaded after it (which synchronizes and
              reports the device error record, as the CUDA backend does).
  abort CASE  runs one call that must stop with a fatal error (Aborts).
  digest      prints a hash of cache_attention's outputs (Threads: the same
              with BRAID_CPU_THREADS=1, 2 and 3, the runtime's promise).

Bounds (rel = max|a - b| / max|b| per tensor, harness.rel):
- against the float64 reference on the same stored inputs: f32 1e-5, bf16
  2^-8, f16 2^-10 (kernel_harness.TOL, argued in cpu-kernels.py);
- prefill through the cache (positions 0, seq = S: cache_write of k, then
  cache_attention) against braid_k_attention (causal) on the same q, k, v in
  f32: 1e-6. The rotated keys are stored in f32 unrounded and the softmax is
  the same f32 arithmetic, so only the order of f32 sums may differ (bit for
  bit on the CPU reference kernels and under CUDA's tile loops);
- decode step by step (each step writes its row, then attends at its
  position) against that prefill in f32: 1e-6, as above;
- data movement (take_rows, cache_write without RoPE, the cache rows no call
  writes) and add_positions (one f32 addition rounded to dt, as
  braid_k_embedding with a position table): bit for bit.
"""

import ctypes
import hashlib
import math
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from braid_ref import ops, ops_inference  # noqa: E402
import kernel_harness  # noqa: E402
from kernel_harness import DTN, DTYPES, F32, I, I4, LIB, P, D, rel, store, values  # noqa: E402

DEVICE = "--device" in sys.argv
RNG = np.random.default_rng(4242)


class CacheShape(ctypes.Structure):
    _fields_ = [(n, ctypes.c_int64) for n in ("batch", "seq", "cache_len", "heads", "kv_heads",
                                             "head_dim", "v_head_dim")] + \
               [("scale", ctypes.c_double), ("rope_theta", ctypes.c_double)]


SIGS = {
    "braid_k_cache_write": [P, I4, P, P, P, I, I, I, I, I, D],
    "braid_k_cache_attention": [P, I4, P, P, P, P, P, ctypes.POINTER(CacheShape)],
    "braid_k_take_rows": [P, I4, P, P, P, I, I, I],
    "braid_k_add_positions": [P, I4, P, P, P, P, I, I, I, I],
    "braid_k_attention": kernel_harness.SIGS["braid_k_attention"],
    "braid_k_embedding": kernel_harness.SIGS["braid_k_embedding"],
}
SHIM = {"braid_test_device_alloc": ([I], P), "braid_test_device_free": ([P], None),
        "braid_test_upload": ([P, P, I], None), "braid_test_download": ([P, P, I], None)}
if LIB is not None:
    for name, args in SIGS.items():
        getattr(LIB, name).argtypes = args
        getattr(LIB, name).restype = None
    if DEVICE:
        for name, (args, res) in SHIM.items():
            getattr(LIB, name).argtypes = args
            getattr(LIB, name).restype = res


def call(name, *args):
    """Kernel `name` with a null runtime context. Arrays pass by address; with
    --device through device copies, downloaded back into them after the call."""
    if not DEVICE:
        getattr(LIB, name)(None, *(a.ctypes.data if isinstance(a, np.ndarray) else a
                                   for a in args))
        return
    dev = {}  # id of an array -> its device copy (an array passed twice: one copy)
    for a in args:
        if isinstance(a, np.ndarray) and id(a) not in dev:
            dev[id(a)] = LIB.braid_test_device_alloc(a.nbytes)
            LIB.braid_test_upload(dev[id(a)], a.ctypes.data, a.nbytes)
    getattr(LIB, name)(None, *(dev[id(a)] if isinstance(a, np.ndarray) else a for a in args))
    for a in args:
        if isinstance(a, np.ndarray) and id(a) in dev:
            p = dev.pop(id(a))
            LIB.braid_test_download(a.ctypes.data, p, a.nbytes)
            LIB.braid_test_device_free(p)


def i32(x):
    return np.ascontiguousarray(x, dtype=np.int32)


def shape_of(b, s, c, hq, hkv, d, dv, scale, theta):
    return ctypes.byref(CacheShape(b, s, c, hq, hkv, d, dv, scale, theta or 0.0))


def cache_write(dt, cache, rows, positions, theta):
    b, c, h, d = cache.shape
    call("braid_k_cache_write", dt, cache, rows, i32(positions), b, c, rows.shape[1], h, d,
         theta or 0.0)


def cache_attention(dt, q, kc, vc, positions, scale, theta):
    b, s, hq, d = q.shape
    c, hkv, dv = kc.shape[1], kc.shape[2], vc.shape[3]
    out = kernel_harness.poisoned((b, s, hq, dv), dt)
    call("braid_k_cache_attention", dt, q, kc, vc, i32(positions), out,
         shape_of(b, s, c, hq, hkv, d, dv, scale, theta))
    return out


def attention(dt, q, k, v, scale, theta):
    """braid_k_attention (causal) of q, k, v."""
    b, s, hq, d = q.shape
    out = kernel_harness.poisoned((b, s, hq, v.shape[3]), dt)
    call("braid_k_attention", dt, q, k, v, out,
         kernel_harness.attn(b, s, s, hq, k.shape[2], d, v.shape[3], True, scale, theta or 0.0))
    return out


class Case(kernel_harness.Case):
    rng = RNG

    def stored(self, shape, dt):
        """(array passed to the kernels, its values as float64)."""
        s, v = store(self.randn(*shape), dt)
        return s.copy(), v.astype(np.float64)


# (batch, seq, cache_len, heads, kv_heads, head_dim, v_head_dim, theta, positions)
ATTENTION_CASES = [
    (3, 1, 12, 4, 2, 8, 8, None, [3, 0, 11]),      # decode, GQA, no RoPE
    (3, 1, 12, 4, 2, 8, 8, 1e4, [3, 0, 11]),       # decode with RoPE
    (2, 1, 40, 4, 2, 16, 6, 5e5, [37, 5]),         # Dv != D, far positions
    (2, 3, 20, 4, 2, 8, 8, 1e4, [4, 17]),          # a chunk of 3 rows per sequence
    (1, 70, 80, 2, 1, 8, 8, 1e4, [9]),             # rows past one 64-row block, MQA
    (2, 1, 9, 8, 2, 4, 4, 1e4, [8, 2]),            # group of 4, last cache row
]


class CacheWrite(Case):
    def test_against_reference(self):
        for theta in (None, 1e4):
            for dt in DTYPES:
                b, s, c, h, d = 3, 2, 10, 2, 8
                positions = [0, 5, 8]
                cache, cache64 = self.stored((b, c, h, d), dt)
                rows, rows64 = self.stored((b, s, h, d), dt)
                before = cache.copy()
                cache_write(dt, cache, rows, positions, theta)
                ref = ops_inference.cache_write(cache64, rows64, i32(positions), theta)
                what = f" theta={theta}"
                self.close("cache_write", dt, cache, ref, what,
                           tol=kernel_harness.TOL[dt] if theta else 0.0)
                written = np.zeros((b, c), bool)
                for i, p in enumerate(positions):
                    written[i, p:p + s] = True
                np.testing.assert_array_equal(cache[~written], before[~written],
                                              "cache_write: rows outside the positions changed")
                if not theta:
                    np.testing.assert_array_equal(cache[written], rows.reshape(-1, h, d))


class CacheAttention(Case):
    def test_against_reference(self):
        for b, s, c, hq, hkv, d, dv, theta, positions in ATTENTION_CASES:
            scale = 1.0 / math.sqrt(d)
            what = f" b={b} s={s} C={c} H={hq}/{hkv} D={d}/{dv} theta={theta} pos={positions}"
            for dt in DTYPES:
                q, q64 = self.stored((b, s, hq, d), dt)
                kc, kc64 = self.stored((b, c, hkv, d), dt)
                vc, vc64 = self.stored((b, c, hkv, dv), dt)
                got = cache_attention(dt, q, kc, vc, positions, scale, theta)
                ref = ops_inference.cache_attention(q64, kc64, vc64, i32(positions), scale, theta)
                self.close("cache_attention", dt, got, ref, what)

    def test_rows_past_a_position_are_ignored(self):
        # NaN in every cache row after the positions: none of it may leak in.
        b, s, c, hq, hkv, d = 2, 2, 10, 4, 2, 8
        positions = [3, 6]
        q, q64 = self.stored((b, s, hq, d), F32)
        kc, kc64 = self.stored((b, c, hkv, d), F32)
        vc, vc64 = self.stored((b, c, hkv, d), F32)
        for i, p in enumerate(positions):
            kc[i, p + s:] = np.nan
            vc[i, p + s:] = np.nan
        got = cache_attention(F32, q, kc, vc, positions, 0.4, 1e4)
        ref = ops_inference.cache_attention(q64, np.nan_to_num(kc64), np.nan_to_num(vc64), i32(positions),
                                  0.4, 1e4)
        self.close("cache_attention", F32, got, ref, " NaN past the positions")

    def test_prefill_and_decode_equal_attention(self):
        b, s, c, hq, hkv, d, dv = 2, 8, 12, 4, 2, 16, 8
        scale = 1.0 / math.sqrt(d)
        for theta in (None, 1e4):
            for dt in DTYPES:
                what = f" {DTN[dt]} theta={theta}"
                q, q64 = self.stored((b, s, hq, d), dt)
                k, k64 = self.stored((b, s, hkv, d), dt)
                v, v64 = self.stored((b, s, hkv, dv), dt)
                full = attention(dt, q, k, v, scale, theta)
                kc, vc = self.stored((b, c, hkv, d), dt)[0], self.stored((b, c, hkv, dv), dt)[0]
                cache_write(dt, kc, k, [0, 0], theta)
                cache_write(dt, vc, v, [0, 0], None)
                prefill = cache_attention(dt, q, kc, vc, [0, 0], scale, theta)
                ref = ops.attention(q64, k64, v64, causal=True, scale=scale, rope_theta=theta)
                self.close("cache_attention prefill", dt, prefill, ref, what)
                # Decode: one row per step into a fresh cache, then attend at it.
                kd, vd = np.zeros_like(kc), np.zeros_like(vc)
                steps = []
                for t in range(s):
                    row = np.ascontiguousarray
                    cache_write(dt, kd, row(k[:, t:t + 1]), [t, t], theta)
                    cache_write(dt, vd, row(v[:, t:t + 1]), [t, t], None)
                    steps.append(cache_attention(dt, row(q[:, t:t + 1]), kd, vd, [t, t], scale,
                                                 theta))
                decode = np.concatenate(steps, axis=1)
                if dt != F32:
                    self.close("cache_attention decode", dt, decode, ref, what)
                    continue
                err = rel(prefill, full)
                kernel_harness.MAX_ERR[("prefill vs attention", "f32")] = max(
                    kernel_harness.MAX_ERR.get(("prefill vs attention", "f32"), 0.0), err)
                self.assertLessEqual(err, 1e-6, f"prefill vs braid_k_attention{what}: {err:.3g}")
                err = rel(decode, prefill)
                kernel_harness.MAX_ERR[("decode vs prefill", "f32")] = max(
                    kernel_harness.MAX_ERR.get(("decode vs prefill", "f32"), 0.0), err)
                self.assertLessEqual(err, 1e-6, f"decode vs prefill{what}: {err:.3g}")

    def test_wrong_position_is_seen(self):
        # The check can fail: decode at the wrong position is far off.
        b, c, hq, hkv, d = 2, 12, 4, 2, 8
        q, q64 = self.stored((b, 1, hq, d), F32)
        kc, kc64 = self.stored((b, c, hkv, d), F32)
        vc, vc64 = self.stored((b, c, hkv, d), F32)
        ref = ops_inference.cache_attention(q64, kc64, vc64, i32([5, 9]), 0.35, 1e4)
        got = cache_attention(F32, q, kc, vc, [5, 8], 0.35, 1e4)
        self.assertGreater(rel(values(got, F32), ref), 0.01)


class RowOps(Case):
    def test_take_rows(self):
        for dt in DTYPES:
            x, x64 = self.stored((3, 5, 7), dt)
            index = i32([4, 0, 2])
            out = kernel_harness.poisoned((3, 7), dt)
            call("braid_k_take_rows", dt, x, index, out, 3, 5, 7)
            np.testing.assert_array_equal(out, x[np.arange(3), index])
            np.testing.assert_array_equal(values(out, dt), ops_inference.take_rows(x64, index))

    def test_add_positions(self):
        for dt in DTYPES:
            b, s, rows, h = 3, 2, 9, 6
            x, x64 = self.stored((b, s, h), dt)
            table, table64 = self.stored((rows, h), dt)
            positions = i32([0, 7, 3])
            out = kernel_harness.poisoned((b, s, h), dt)
            call("braid_k_add_positions", dt, x, table, positions, out, b, s, rows, h)
            at = positions[:, None] + np.arange(s)[None, :]
            f32sum = values(x, dt) + values(table, dt)[at]  # one f32 addition each
            np.testing.assert_array_equal(out, store(f32sum, dt)[0])
            self.close("add_positions", dt, out, ops_inference.add_positions(x64, table64, positions))
            call("braid_k_add_positions", dt, x, table, positions, x, b, s, rows, h)  # in place
            np.testing.assert_array_equal(x, out)

    def test_add_positions_is_embeddings_position_sum(self):
        for dt in DTYPES:
            vocab, s, h = 11, 4, 8
            table, _ = self.stored((vocab, h), dt)
            pos, _ = self.stored((s, h), dt)
            tokens = i32(self.rng.integers(0, vocab, (2, s)))
            with_pos = kernel_harness.poisoned((2, s, h), dt)
            plain = kernel_harness.poisoned((2, s, h), dt)
            call("braid_k_embedding", dt, kernel_harness.I32, tokens, table, pos, with_pos, 2 * s,
                 s, vocab, h)
            call("braid_k_embedding", dt, kernel_harness.I32, tokens, table, None, plain, 2 * s,
                 s, vocab, h)
            call("braid_k_add_positions", dt, plain, pos, i32([0, 0]), plain, 2, s, s, h)
            np.testing.assert_array_equal(plain, with_pos)


# --- thread counts -----------------------------------------------------------

def outputs_digest():
    """sha256 of cache_attention's outputs on a fixed set of calls (decode and a
    chunk past one GEMM block; f32 and bf16)."""
    rng, digest = np.random.default_rng(3), hashlib.sha256()
    for dt in (F32, kernel_harness.BF16):
        for b, s, c, hq, hkv, d, positions in ((3, 1, 300, 8, 2, 64, [299, 17, 150]),
                                                (2, 80, 200, 4, 2, 32, [0, 100])):
            q, kc, vc = (store(rng.standard_normal(shape), dt)[0]
                         for shape in ((b, s, hq, d), (b, c, hkv, d), (b, c, hkv, d)))
            digest.update(cache_attention(dt, q, kc, vc, positions, 0.125, 1e4).tobytes())
    print(digest.hexdigest())


class Threads(Case):
    def test_results_do_not_depend_on_threads(self):
        if DEVICE:
            self.skipTest("CPU threads only")
        digests = set()
        for threads in ("1", "2", "3"):
            r = subprocess.run([sys.executable, os.path.abspath(__file__), kernel_harness.LIB_PATH,
                                "digest"], capture_output=True, text=True, timeout=120,
                               env=dict(os.environ, BRAID_CPU_THREADS=threads))
            self.assertEqual(r.returncode, 0, r.stderr)
            digests.add(r.stdout.strip())
        self.assertEqual(len(digests), 1, f"outputs differ with the thread count: {digests}")


# --- fatal errors ------------------------------------------------------------

def abort_case(which):
    """One call with a bad position or index (run in a child process)."""
    f = np.zeros((2, 4, 2, 4), np.float32)  # caches [2, C=4, 2, 4] and rows
    rows = np.zeros((2, 2, 2, 4), np.float32)
    x = np.zeros((2, 3, 4), np.float32)
    out = np.zeros((2, 4), np.float32)
    if which == "write_past_cache":     # sequence 1 writes rows 3..4 of 4
        cache_write(F32, f, rows, [0, 3], None)
    elif which == "write_negative":
        cache_write(F32, f, rows, [-1, 0], 1e4)
    elif which == "attention_past_cache":  # sequence 1 attends at 4
        q = np.zeros((2, 1, 2, 4), np.float32)
        cache_attention(F32, q, f, f, [1, 4], 0.5, 1e4)
    elif which == "take_rows_past_end":
        call("braid_k_take_rows", F32, x, i32([0, 3]), out, 2, 3, 4)
    elif which == "take_rows_negative":
        call("braid_k_take_rows", F32, x, i32([-2, 0]), out, 2, 3, 4)
    elif which == "add_positions_past_table":  # sequence 0 at rows 4..6 of 6
        call("braid_k_add_positions", F32, x, np.zeros((6, 4), np.float32), i32([4, 0]), x, 2,
             3, 6, 4)
    print("returned")


CPU_MESSAGES = {
    "write_past_cache": "braid: cache_write: sequence 1 at positions 3..4 is outside the "
                        "cache's [0, 4)",
    "write_negative": "braid: cache_write: sequence 0 at positions -1..0 is outside the "
                      "cache's [0, 4)",
    "attention_past_cache": "braid: cache_attention: sequence 1 attends at positions 4..4, "
                            "outside the cache's [0, 4)",
    "take_rows_past_end": "braid: take_rows: index 3 of sequence 1 is outside [0, 3)",
    "take_rows_negative": "braid: take_rows: index -2 of sequence 0 is outside [0, 3)",
    "add_positions_past_table": "braid: add_positions: sequence 0 at positions 4..6 is outside "
                                "the table's [0, 6)",
}
# The CUDA kernels record the first bad position they meet on the device.
DEVICE_MESSAGES = {
    "write_past_cache": "cache_write: position 4 of sequence 1 is out of range [0, 4)",
    "write_negative": "cache_write: position -1 of sequence 0 is out of range [0, 4)",
    "attention_past_cache": "cache_attention: position 4 of sequence 1 is out of range [0, 4)",
    "take_rows_past_end": "take_rows: index 3 of sequence 1 is out of range [0, 3)",
    "take_rows_negative": "take_rows: index -2 of sequence 0 is out of range [0, 3)",
    "add_positions_past_table": "add_positions: position 6 of sequence 0 is out of range "
                                "[0, 6)",
}


class Aborts(Case):
    def test_fatal_errors(self):
        # The child runs this file as `cache_cases.py LIB abort CASE [--device]`.
        self.check_abort_cases(__file__, DEVICE_MESSAGES if DEVICE else CPU_MESSAGES, DEVICE)


def main():
    kernel_harness.case_main("cache_cases.py", 28, abort_case, {"digest": outputs_digest})


if __name__ == "__main__":
    main()
