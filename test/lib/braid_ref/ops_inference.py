"""The inference ops' references that are not arithmetic on tensors: braid.sample.

Written from the op's description in dialects/braid/IR/BraidSampleOps.td (not
from the kernels): each row orders its whole vocabulary, as sampleToken does.
Weights are Python integers (exact sums) and exp is math.exp (the C library's,
as the kernels' double exp).
"""

from __future__ import annotations

import math

import numpy as np

from . import rng

WEIGHT_BITS = 40


def uniform(stream: int, step: int) -> float:
    """The draw's uniform of (stream, step): rng's key of (stream, "sample"),
    Philox at counter `step`, the 53 high bits of its first two words."""
    k0, k1 = rng.key_of(int(stream), "sample")
    x = rng.philox4x32_10(step & 0xFFFFFFFF, step >> 32, 0, 0, k0, k1)
    word = (int(x[0]) << 32) | int(x[1])
    return (word >> 11) * 2.0 ** -53


def weight(logit: float, top: float, temperature: float) -> int:
    p = math.exp((float(logit) - float(top)) / temperature)
    return int(math.ldexp(min(p, 1.0), WEIGHT_BITS))


def sample_row(row, vocab: int, temperature: float, top_k: int, top_p: float,
               stream: int, step: int) -> int:
    """One row's token (BraidSampleOps.td's semantics)."""
    row = [float(x) for x in np.asarray(row, dtype=np.float32)[:vocab]]
    if temperature <= 0 or vocab <= 1:
        best = 0
        for i, x in enumerate(row):
            if x > row[best]:
                best = i
        return best
    top = max(row)
    w = [weight(x, top, temperature) for x in row]
    order = sorted(range(vocab), key=lambda i: (-w[i], i))
    kept = order[:top_k] if 0 < top_k < vocab else order
    total = sum(w[i] for i in kept)
    if top_p < 1:
        need = math.ceil(top_p * float(total))
        mass = 0
        for j, i in enumerate(kept):
            mass += w[i]
            if mass >= need:
                kept, total = kept[:j + 1], mass
                break
    target = min(int(uniform(stream, step) * float(total)), total - 1)
    mass = 0
    for i in sorted(kept):
        mass += w[i]
        if target < mass:
            return i
    raise AssertionError("the kept mass exceeds the target")


def sample(logits, seeds, steps, temperature, top_k, top_p, vocab: int) -> np.ndarray:
    """braid.sample: ids [B] (i32) of logits [B, V] (float, read as f32) with
    per-row seeds, steps (i64), temperature, top_p (f32, read as double) and
    top_k (i32); columns at or past `vocab` are never drawn."""
    logits = np.asarray(logits, dtype=np.float32)
    t32 = np.asarray(temperature, dtype=np.float32)
    p32 = np.asarray(top_p, dtype=np.float32)
    return np.array([sample_row(logits[b], vocab, float(t32[b]), int(top_k[b]), float(p32[b]),
                                int(seeds[b]), int(steps[b]))
                     for b in range(logits.shape[0])], dtype=np.int32)
