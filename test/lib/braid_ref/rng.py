"""Deterministic, shardable initialization of parameters and inputs.

SPECIFICATION (the C++ runtime implements exactly this)
=======================================================

Every value is a function of (seed, name, i) only, where i is the row-major
global element index of the tensor (0 <= i < 2^64). A rank holding a shard
generates the elements of its slice from their global indices, so any
sharding yields the same global tensor.

1. Key. Let s be the UTF-8 bytes of the string f"{seed}:{name}" (the seed as
   a decimal integer without sign or leading zeros, e.g. "0:layers.0.attn.wq").
   h = FNV-1a 64-bit over s: h = 0xcbf29ce484222325; for each byte b:
   h = (h XOR b) * 0x100000001b3 mod 2^64.
   key = (k0, k1) = (h mod 2^32, h >> 32).

2. Bits. (x0, x1, x2, x3) = Philox4x32-10(counter, key) with counter
   (c0, c1, c2, c3) = (i mod 2^32, i >> 32, 0, 0). Philox4x32-10 is that of
   Random123 (Salmon et al., SC'11): 10 rounds; one round maps
   (c0, c1, c2, c3) with key (k0, k1) to
       (hi(M1*c2) ^ c1 ^ k0, lo(M1*c2), hi(M0*c0) ^ c3 ^ k1, lo(M0*c0))
   with M0 = 0xD2511F53, M1 = 0xCD9E8D57, hi/lo the upper/lower 32 bits of
   the 64-bit product; between two rounds the key is bumped:
   k0 += 0x9E3779B9, k1 += 0xBB67AE85 (mod 2^32). The key of the first round
   is the unbumped key. The output is the counter after round 10.

3. Normal draw (init `normal(std)`), in IEEE double:
       u1 = (x0 + 1) * 2^-32          in (0, 1]
       u2 = x1 * 2^-32                in [0, 1)
       z  = sqrt(-2 ln u1) * cos(2 pi u2)
   value = std * z in double, then rounded to nearest to the parameter's
   element type (f32, f16; bf16: round-to-nearest-even of the f32 value to
   bf16). x2 and x3 are unused by normal draws. `zeros` and `ones` are the
   constants 0 and 1 (no draw).

3b. Mamba's state-space inits (Gu & Dao 2023), in IEEE double, rounded as in
   step 3:
   `s4d_real` (A_log; S4D-Real, A = -exp(A_log) = -(n + 1)):
       value = ln(1 + (i mod N)), N the tensor's last dimension (global);
   `mamba_dt` (the time-step bias, so that softplus(bias) = dt at init):
       u  = x3 * 2^-32                in [0, 1)
       dt = max(exp(u (ln 0.1 - ln 0.001) + ln 0.001), 1e-4)
       value = dt + ln(-expm1(-dt))   (softplus^-1(dt))

4. Integer draw (token / label inputs of the step function), uniform in
   [0, n): with x2 from step 2 under the name "tokens" or "labels",
       value = floor(x2 * 2^-32 * n) = (x2 * n) >> 32   (exact integer arithmetic)
   The two forms agree exactly whenever n < 2^21 (the double product is
   exact); the integer form is normative.

Exactness note: steps 1, 2 and 4 are integer arithmetic and bit exact. Step 3
uses log and cos in double; numpy's vectorized log/cos and a C library's may
differ in the last bit of the double, which survives rounding to f32 only
when the double lies within an ulp of an f32 rounding boundary (about 1 in
2^28 draws). `normal_exact` computes step 3 with Python's math module (the
C library's log/cos) for bit-exact comparisons; `normal` is the fast path.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["fnv1a64", "key_of", "philox4x32_10", "bits", "normal", "normal_exact",
           "uniform_int", "mamba_dt_bias", "param_values", "round_bf16", "DTYPES"]

_MASK32 = np.uint64(0xFFFFFFFF)
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_SHIFT32 = np.uint64(32)
_TWO_M32 = 2.0 ** -32
_CHUNK = 1 << 20   # elements per vectorized batch (bounds temporary memory)


def fnv1a64(data: bytes) -> int:
    """FNV-1a 64-bit hash of `data`."""
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def key_of(seed: int, name: str) -> tuple:
    """The Philox key (k0, k1) of stream `name` under `seed`."""
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    h = fnv1a64(f"{int(seed)}:{name}".encode("utf-8"))
    return h & 0xFFFFFFFF, h >> 32


def philox4x32_10(c0, c1, c2, c3, k0: int, k1: int) -> tuple:
    """Philox4x32-10 on arrays of 32-bit counter words (any integer dtype holding
    values < 2^32), key (k0, k1). Returns four uint32 arrays."""
    c = [np.asarray(w, dtype=np.uint64) & _MASK32 for w in (c0, c1, c2, c3)]
    k0, k1 = np.uint64(k0 & 0xFFFFFFFF), np.uint64(k1 & 0xFFFFFFFF)
    for r in range(10):
        if r:                                      # bump the key between rounds
            k0, k1 = (k0 + _W0) & _MASK32, (k1 + _W1) & _MASK32
        p0 = _M0 * c[0]                            # 32 x 32 -> 64 bits: no overflow
        p1 = _M1 * c[2]
        c = [(p1 >> _SHIFT32) ^ c[1] ^ k0, p1 & _MASK32,
             (p0 >> _SHIFT32) ^ c[3] ^ k1, p0 & _MASK32]
    return tuple(w.astype(np.uint32) for w in c)


def bits(seed: int, name: str, start: int, stop: int) -> tuple:
    """(x0, x1, x2, x3) for the global element indices [start, stop)."""
    if not 0 <= start <= stop <= 2 ** 64:
        raise ValueError(f"bad index range [{start}, {stop})")
    k0, k1 = key_of(seed, name)
    i = np.arange(start, stop, dtype=np.uint64)
    return philox4x32_10(i & _MASK32, i >> _SHIFT32, 0, 0, k0, k1)


def _chunks(start: int, stop: int):
    for a in range(start, stop, _CHUNK):
        yield a, min(stop, a + _CHUNK)


def normal(seed: int, name: str, start: int, stop: int) -> np.ndarray:
    """Standard normal draws (float64) for the global indices [start, stop)."""
    out = np.empty(stop - start, dtype=np.float64)
    for a, b in _chunks(start, stop):
        x0, x1, _, _ = bits(seed, name, a, b)
        u1 = (x0.astype(np.float64) + 1.0) * _TWO_M32
        u2 = x1.astype(np.float64) * _TWO_M32
        out[a - start:b - start] = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)
    return out


def normal_exact(seed: int, name: str, start: int, stop: int) -> np.ndarray:
    """As `normal`, with log/cos/sqrt of the C library (slow; for bit-exact checks)."""
    x0, x1, _, _ = bits(seed, name, start, stop)
    two_pi = 2.0 * math.pi
    vals = [math.sqrt(-2.0 * math.log((int(a) + 1) * _TWO_M32)) * math.cos(two_pi * (int(b) * _TWO_M32))
            for a, b in zip(x0, x1)]
    return np.array(vals, dtype=np.float64)


def mamba_dt_bias(seed: int, name: str, start: int, stop: int, exact: bool = False) -> np.ndarray:
    """Mamba's time-step bias softplus^-1(dt), dt log-uniform in [1e-3, 0.1]
    (floored at 1e-4), for the global indices [start, stop) (float64)."""
    lo, hi = math.log(1e-3), math.log(1e-1)
    out = np.empty(stop - start, dtype=np.float64)
    for a, b in _chunks(start, stop):
        _, _, _, x3 = bits(seed, name, a, b)
        u = x3.astype(np.float64) * _TWO_M32
        if exact:
            dts = [max(math.exp(float(x) * (hi - lo) + lo), 1e-4) for x in u]
            out[a - start:b - start] = [d + math.log(-math.expm1(-d)) for d in dts]
        else:
            dt = np.maximum(np.exp(u * (hi - lo) + lo), 1e-4)
            out[a - start:b - start] = dt + np.log(-np.expm1(-dt))
    return out


def uniform_int(seed: int, name: str, n: int, start: int, stop: int) -> np.ndarray:
    """Integers uniform in [0, n) for the global indices [start, stop): (x2 * n) >> 32."""
    if not 1 <= n < 2 ** 32:
        raise ValueError(f"range size {n} must be in [1, 2^32)")
    out = np.empty(stop - start, dtype=np.int64)
    for a, b in _chunks(start, stop):
        _, _, x2, _ = bits(seed, name, a, b)
        # x2 * n < 2^64: exact in uint64.
        out[a - start:b - start] = (x2.astype(np.uint64) * np.uint64(n)) >> _SHIFT32
    return out


def round_bf16(x) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), returned as
    float32 (numpy has no bf16 type). NaN stays NaN."""
    f = np.asarray(x, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    rounded = ((u + np.uint64(0x7FFF) + ((u >> np.uint64(16)) & np.uint64(1)))
               & np.uint64(0xFFFF0000)).astype(np.uint32)
    return np.where(np.isnan(f), f, rounded.view(np.float32))


# braid element type -> numpy storage dtype (bf16 is stored as bf16-rounded float32)
DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": np.float32, "f64": np.float64}


def param_values(seed: int, name: str, shape, init: str, std=None, dtype: str = "f32",
                 start: int = 0, stop=None, exact: bool = False) -> np.ndarray:
    """Elements [start, stop) (row-major global indices) of parameter `name` of
    `shape` with init "normal" (needs std), "zeros", "ones", "s4d_real" or
    "mamba_dt", in `dtype`.
    The whole tensor (reshaped to `shape`) when start/stop are not given;
    otherwise the flat slice. "f64" keeps the unrounded double values."""
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}")
    numel = math.prod(shape)
    whole = start == 0 and stop is None
    stop = numel if stop is None else stop
    if not 0 <= start <= stop <= numel:
        raise ValueError(f"slice [{start}, {stop}) outside a tensor of {numel} elements")
    if init == "normal":
        if std is None:
            raise ValueError(f"{name}: normal init needs a std")
        draw = normal_exact if exact else normal
        v = float(std) * draw(seed, name, start, stop)
    elif init in ("zeros", "ones"):
        v = np.full(stop - start, 0.0 if init == "zeros" else 1.0)
    elif init == "s4d_real":
        if not shape:
            raise ValueError(f"{name}: s4d_real init needs a tensor of rank >= 1")
        n = np.arange(start, stop, dtype=np.uint64) % np.uint64(shape[-1])
        v = (np.log(1.0 + n.astype(np.float64)) if not exact
             else np.array([math.log(1.0 + float(k)) for k in n], dtype=np.float64))
    elif init == "mamba_dt":
        v = mamba_dt_bias(seed, name, start, stop, exact)
    else:
        raise ValueError(f"{name}: unknown init {init!r}")
    v = v.astype(DTYPES[dtype])
    if dtype == "bf16":
        v = round_bf16(v)
    return v.reshape(tuple(shape)) if whole else v
