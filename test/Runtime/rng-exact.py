# RUN: %python %s %braid_rt_bin/rng-dump
#
# The runtime's deterministic initialization (runtime/src/rng.cpp) is bit-exact
# with the specification test/lib/braid_ref/rng.py: Philox words, normal draws
# rounded to f32 / bf16 / f16 (compared as bit patterns), Mamba's s4d_real and
# mamba_dt inits, integer draws, slices
# in the middle of a tensor, counters across 2^32, dotted names, large seeds.
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import rng  # noqa: E402

tool = sys.argv[1]
failures = []


def dump(**kw):
    args = [tool]
    for k, v in kw.items():
        args += ["--" + k] if v is True else ["--" + k, str(v)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return out.split("\n")[:-1]


def check(what, got, want):
    got, want = list(got), list(want)
    if got != want:
        bad = next(i for i in range(min(len(got), len(want)) + 1)
                   if i >= min(len(got), len(want)) or got[i] != want[i])
        failures.append(f"{what}: {len(got)} vs {len(want)} values; first difference at "
                        f"{bad}: {got[bad:bad + 3]} vs {want[bad:bad + 3]}")


def hex32(a):
    return [f"0x{int(v):08x}" for v in a]


# Raw Philox words, across the 2^32 counter boundary.
start = 2 ** 32 - 4
x = rng.bits(7, "w", start, start + 8)
check("bits", dump(seed=7, name="w", start=start, count=8, bits=True),
      [" ".join(f"0x{int(w[n]):08x}" for w in x) for n in range(8)])

# Normal draws: f32 / bf16 / f16 bit patterns (exact path: the C library's log and cos).
cases = [
    # seed, name, dtype, std, start, count
    (0, "layers.0.attn.wq", "f32", 0.02, 0, 3000),
    (123456789, "blocks.11.mlp.w_in", "f32", 1.0, 1_000_003, 2000),   # a slice in the middle
    (2 ** 64 - 1, "embed", "f32", 0.5, 2 ** 32 - 10, 20),             # large seed, counter high word
    (3, "layers.2.norm.g", "bf16", 1.0, 0, 2000),
    (3, "layers.2.attn.wo", "bf16", 0.01, 77_777, 1500),
    (5, "head", "f16", 1.0, 10, 2000),
    (9, "big", "f32", 0.1, 0, 140_000),                               # multi-threaded fill
]
for seed, name, dtype, std, a, n in cases:
    got = dump(seed=seed, name=name, dtype=dtype, init="normal", std=repr(std), start=a, count=n)
    want = rng.param_values(seed, name, (a + n,), "normal", std, dtype, a, a + n, exact=True)
    want = ([f"0x{int(v):04x}" for v in want.view(np.uint16)] if dtype == "f16"
            else hex32(want.view(np.uint32)))
    check(f"normal {dtype} seed={seed} {name} [{a}, {a + n})", got, want)

# Constants.
for init, value in (("zeros", 0.0), ("ones", 1.0)):
    for dtype in ("f32", "bf16"):
        check(f"{init} {dtype}", dump(seed=1, name="c", dtype=dtype, init=init, count=5),
              hex32(np.full(5, value, np.float32).view(np.uint32)))

# Mamba's inits: s4d_real along a last dimension of 16 (a slice starting
# mid-row), mamba_dt from the fourth Philox word (multi-threaded fill too).
mamba = [
    # seed, name, init, dtype, bound, start, count
    (0, "layers.0.mamba.A_log", "s4d_real", "f32", 16, 5, 3000),
    (0, "layers.0.mamba.A_log", "s4d_real", "bf16", 16, 0, 64),
    (4, "layers.3.mamba.dt_bias", "mamba_dt", "f32", 0, 0, 3000),
    (4, "layers.3.mamba.dt_bias", "mamba_dt", "bf16", 0, 100, 500),
    (6, "dt", "mamba_dt", "f32", 0, 2 ** 32 - 3, 140_000),
]
for seed, name, init, dtype, bound, a, n in mamba:
    got = dump(seed=seed, name=name, dtype=dtype, init=init, bound=bound, start=a, count=n)
    shape = (a + n,) if init == "mamba_dt" else ((a + n + bound - 1) // bound, bound)
    want = rng.param_values(seed, name, shape, init, None, dtype, a, a + n, exact=True)
    check(f"{init} {dtype} seed={seed} {name} [{a}, {a + n})", got,
          hex32(want.view(np.uint32)))
dt = np.logaddexp(0.0, rng.param_values(4, "dt", (4096,), "mamba_dt", dtype="f64"))
if not (dt.min() >= 1e-3 * (1 - 1e-9) and dt.max() <= 0.1 * (1 + 1e-9)):
    failures.append(f"mamba_dt: softplus(bias) in [{dt.min()}, {dt.max()}], not [1e-3, 0.1]")

# Integer draws: exact.
ints = [
    # seed, name, dtype, bound, start, count
    (0, "tokens", "i32", 50257, 0, 5000),
    (42, "labels", "i64", 97, 2 ** 32 - 5, 10),
    (42, "labels", "i64", 2 ** 32 - 1, 123_456, 1000),                # bound past 2^21
    (1, "tokens", "i32", 1, 0, 10),
    (8, "data.tokens", "i32", 32000, 300_000, 140_000),               # multi-threaded fill
]
for seed, name, dtype, bound, a, n in ints:
    got = dump(seed=seed, name=name, dtype=dtype, init="tokens", bound=bound, start=a, count=n)
    check(f"tokens {dtype} seed={seed} {name} bound={bound} [{a}, {a + n})", got,
          [str(v) for v in rng.uniform_int(seed, name, bound, a, a + n)])

# Bad requests fail cleanly.
for kw in (dict(init="tokens", dtype="f32", bound=5), dict(init="normal", dtype="i32"),
           dict(init="tokens", dtype="i64", bound=0)):
    r = subprocess.run([tool, "--seed", "0", "--name", "x"] +
                       [s for k, v in kw.items() for s in ("--" + k, str(v))],
                       capture_output=True, text=True)
    if r.returncode == 0 or "x:" not in r.stderr:
        failures.append(f"{kw}: expected a clean failure, got {r.returncode} {r.stderr!r}")

for f in failures:
    print(f)
print("ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
