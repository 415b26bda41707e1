"""The kernels of a KV cache split by sequence over context-parallel ranks
(runtime_inference.h: braid_k_cache_write_chunk, braid_k_cache_attention_chunk,
braid_k_cache_attention_merge) against braid_ref.ops_inference, on the CPU
(test/Kernels/cpu-cache-context.py) and the CUDA kernels under cudasim
(test/Cuda/cudasim-cache-context.py).

Usage: cache_context_cases.py KERNELS.so [--device] [abort CASE]
(--device and abort as in cache_cases.py.)

Bounds (rel as kernel_harness.rel):
- against the float64 reference on the same stored inputs: the chunk
  write as cache_write (f32 1e-5, bf16 2^-8, f16 2^-10 with RoPE, bit for bit
  without); a chunk's f32 out and lse 1e-5 whatever the stored type (only f32
  arithmetic on exact inputs); the merge 1e-6 (double weights, one rounding);
- the ranks' chunks together against the one-rank kernels in f32: every
  chunk's write is the one-rank write's rows bit for bit (the same rotation),
  and the merged attention equals braid_k_cache_attention within 1e-5 (the
  split changes only the order of the f32 sums and adds the merge's
  rounding);
- a wrong merge (equal weights instead of the log-sum-exps) is off by more
  than 1e-2: the check can fail.
"""

import ctypes
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "lib"))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import cache_cases  # noqa: E402
from braid_ref import ops, ops_inference  # noqa: E402
import kernel_harness  # noqa: E402
from cache_cases import CacheShape, call, i32, shape_of  # noqa: E402
from kernel_harness import DTYPES, F32, I, I4, LIB, P, D, rel  # noqa: E402

DEVICE = cache_cases.DEVICE
SIGS = {
    "braid_k_cache_write_chunk": [P, I4, P, P, P, I, I, I, I, I, D, I, I],
    "braid_k_cache_attention_chunk": [P, I4, P, P, P, P, P, P, ctypes.POINTER(CacheShape), I, I],
    "braid_k_cache_attention_merge": [P, I4, P, P, P, I, I, I],
}
if LIB is not None:
    for name, args in SIGS.items():
        getattr(LIB, name).argtypes = args
        getattr(LIB, name).restype = None


def write_chunk(dt, cache, rows, positions, first, context, theta):
    b, cl, h, d = cache.shape
    call("braid_k_cache_write_chunk", dt, cache, rows, i32(positions), b, cl, rows.shape[1], h,
         d, theta or 0.0, first, context)


def attention_chunk(dt, q, kc, vc, positions, first, context, scale, theta):
    b, s, hq, d = q.shape
    cl, hkv, dv = kc.shape[1], kc.shape[2], vc.shape[3]
    out = kernel_harness.poisoned((b, s, hq, dv), F32)
    lse = kernel_harness.poisoned((b, s, hq), F32)
    call("braid_k_cache_attention_chunk", dt, q, kc, vc, i32(positions), out, lse,
         shape_of(b, s, cl, hq, hkv, d, dv, scale, theta), first, context)
    return out, lse


def merge(dt, outs, lses, parts):
    rows = lses.size // parts
    result = kernel_harness.poisoned((outs.shape[0] // parts,) + outs.shape[1:], dt)
    call("braid_k_cache_attention_merge", dt, np.ascontiguousarray(outs),
         np.ascontiguousarray(lses), result, parts, rows, outs.shape[-1])
    return result


def split_attention(dt, q, kc, vc, positions, ranks, scale, theta, wrong=False):
    """Every rank's chunk attention, gathered along dimension 0 and merged."""
    c = kc.shape[1]
    cl = c // ranks
    outs, lses = [], []
    for r in range(ranks):
        o, l = attention_chunk(dt, q, np.ascontiguousarray(kc[:, r * cl:(r + 1) * cl]),
                               np.ascontiguousarray(vc[:, r * cl:(r + 1) * cl]), positions,
                               r * cl, c, scale, theta)
        outs.append(o)
        lses.append(l)
    lse = np.concatenate(lses)
    if wrong:
        lse = np.zeros_like(lse)
    return merge(dt, np.concatenate(outs), lse, ranks)


# (batch, seq, cache_len, heads, kv_heads, head_dim, v_head_dim, theta, positions, ranks)
CASES = [
    (3, 1, 12, 4, 2, 8, 8, None, [3, 0, 11], 2),    # decode, GQA, no RoPE
    (3, 1, 12, 4, 2, 8, 8, 1e4, [3, 6, 11], 4),     # decode, a chunk per 3 rows
    (2, 1, 40, 4, 2, 16, 6, 5e5, [37, 5], 2),       # Dv != D
    (2, 8, 16, 4, 2, 8, 8, 1e4, [0, 0], 2),         # prefill-shaped
    (2, 3, 20, 4, 2, 8, 8, 1e4, [4, 17], 4),        # a continued prompt over chunks
    (1, 70, 80, 2, 1, 8, 8, 1e4, [9], 2),           # MQA, many rows
]


class WriteChunk(cache_cases.Case):
    def test_against_reference_and_one_rank(self):
        for theta in (None, 1e4):
            for dt in DTYPES:
                b, s, c, h, d, ranks = 3, 4, 12, 2, 8, 3
                positions = [0, 5, 8]
                rows, rows64 = self.stored((b, s, h, d), dt)
                whole, _ = self.stored((b, c, h, d), dt)
                chunks = [np.ascontiguousarray(whole[:, r * 4:(r + 1) * 4]) for r in range(ranks)]
                before = [x.copy() for x in chunks]
                cache_cases.cache_write(dt, whole, rows, positions, theta)
                for r, chunk in enumerate(chunks):
                    ref = ops_inference.cache_write_chunk(kernel_harness.values64(before[r], dt), rows64,
                                                i32(positions), r * 4, c, theta)
                    write_chunk(dt, chunk, rows, positions, r * 4, c, theta)
                    self.close("cache_write_chunk", dt, chunk, ref, f" theta={theta} rank {r}",
                               tol=kernel_harness.TOL[dt] if theta else 0.0)
                np.testing.assert_array_equal(np.concatenate(chunks, axis=1), whole,
                                              "the chunks' writes differ from one rank's")


class AttentionChunk(cache_cases.Case):
    def test_against_reference(self):
        for b, s, c, hq, hkv, d, dv, theta, positions, ranks in CASES:
            scale = 1.0 / math.sqrt(d)
            cl = c // ranks
            for dt in DTYPES:
                q, q64 = self.stored((b, s, hq, d), dt)
                kc, kc64 = self.stored((b, cl, hkv, d), dt)
                vc, vc64 = self.stored((b, cl, hkv, dv), dt)
                for r in range(ranks):
                    what = f" b={b} s={s} C={c} rank {r}/{ranks} pos={positions}"
                    out, lse = attention_chunk(dt, q, kc, vc, positions, r * cl, c, scale, theta)
                    ref_out, ref_lse = ops_inference.cache_attention_chunk(q64, kc64, vc64, i32(positions),
                                                                 r * cl, c, scale, theta)
                    self.close("cache_attention_chunk out", F32, out, ref_out, what)
                    seen = np.isfinite(ref_lse)
                    np.testing.assert_array_equal(np.isfinite(lse), seen, what)
                    if seen.any():
                        self.close("cache_attention_chunk lse", F32, lse[seen], ref_lse[seen],
                                   what)


class Merge(cache_cases.Case):
    def test_against_reference(self):
        for dt in DTYPES:
            parts, b, s, h, dv = 3, 2, 4, 2, 5
            outs = self.randn(parts * b, s, h, dv)
            lses = self.randn(parts * b, s, h) * 3
            lses[0:b, 0] = -np.inf              # a chunk that saw nothing
            lses[:, 1, 0] = -np.inf             # a row no chunk saw
            got = merge(dt, outs, lses, parts)
            ref = ops_inference.cache_attention_merge(outs, lses, parts)
            self.close("cache_attention_merge", dt, got, ref, "",
                       tol=1e-6 if dt == F32 else None)

    def test_split_equals_one_rank(self):
        for b, s, c, hq, hkv, d, dv, theta, positions, ranks in CASES:
            scale = 1.0 / math.sqrt(d)
            what = f" b={b} s={s} C={c} ranks={ranks} pos={positions}"
            q, q64 = self.stored((b, s, hq, d), F32)
            kc, kc64 = self.stored((b, c, hkv, d), F32)
            vc, vc64 = self.stored((b, c, hkv, dv), F32)
            one = cache_cases.cache_attention(F32, q, kc, vc, positions, scale, theta)
            split = split_attention(F32, q, kc, vc, positions, ranks, scale, theta)
            err = rel(split, one)
            key = ("split vs one rank", "f32")
            kernel_harness.MAX_ERR[key] = max(kernel_harness.MAX_ERR.get(key, 0.0), err)
            self.assertLessEqual(err, 1e-5, f"split vs one rank{what}: {err:.3g}")
            ref = ops_inference.cache_attention(q64, kc64, vc64, i32(positions), scale, theta)
            self.close("split cache attention", F32, split, ref, what)

    def test_wrong_merge_is_seen(self):
        b, s, c, hq, hkv, d, dv, theta, positions, ranks = CASES[3]
        q, _ = self.stored((b, s, hq, d), F32)
        kc, _ = self.stored((b, c, hkv, d), F32)
        vc, _ = self.stored((b, c, hkv, dv), F32)
        one = cache_cases.cache_attention(F32, q, kc, vc, positions, 0.35, theta)
        wrong = split_attention(F32, q, kc, vc, positions, ranks, 0.35, theta, wrong=True)
        self.assertGreater(rel(wrong, one), 1e-2)


def abort_case(which):
    cache = np.zeros((2, 4, 2, 4), np.float32)  # the chunk [4, 8) of a context of 8
    rows = np.zeros((2, 2, 2, 4), np.float32)
    if which == "write_past_context":          # sequence 1 writes rows 7..8 of 8
        write_chunk(F32, cache, rows, [0, 7], 4, 8, None)
    elif which == "attention_past_context":    # sequence 0 attends at 8
        q = np.zeros((2, 1, 2, 4), np.float32)
        attention_chunk(F32, q, cache, cache, [8, 1], 4, 8, 0.5, 1e4)
    elif which == "chunk_past_context":        # rows [6, 10) of 8
        write_chunk(F32, cache, rows, [0, 0], 6, 8, None)
    print("returned")


CPU_MESSAGES = {
    "write_past_context": "braid: cache_write_chunk: sequence 1 at positions 7..8 is outside "
                          "the cache's [0, 8)",
    "attention_past_context": "braid: cache_attention_chunk: sequence 0 at positions 8..8 is "
                              "outside the cache's [0, 8)",
    "chunk_past_context": "braid: cache_write_chunk: chunk [6, 10) is outside the context's "
                          "[0, 8)",
}
# The CUDA kernels record a bad position under cache_write's and
# cache_attention's error codes.
DEVICE_MESSAGES = {
    "write_past_context": "cache_write: position 8 of sequence 1 is out of range [0, 8)",
    "attention_past_context": "cache_attention: position 8 of sequence 0 is out of range [0, 8)",
    "chunk_past_context": "cache_write_chunk: chunk [6, 10) is outside the context's [0, 8)",
}


class Aborts(cache_cases.Case):
    def test_fatal_errors(self):
        self.check_abort_cases(__file__, DEVICE_MESSAGES if DEVICE else CPU_MESSAGES, DEVICE)


def main():
    kernel_harness.case_main("cache_context_cases.py", 28, abort_case)


if __name__ == "__main__":
    main()
