# REQUIRES: mpirun
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# Initialization split among replicas (runtime/src/persistent.cpp): a tensor
# that several ranks hold whole or in the same shard (its replicas: the grid
# axes that do not split it) and that is drawn at random is generated a
# piece per replica and assembled by an all-gather, so a dp=4 run draws a
# quarter of the parameters per rank. The values must be those one rank
# draws alone (rng.h: a function of the global index only). llama-tiny with
# tensors past the split's threshold (MLP weights of 256 x 1024, embedding
# 512 x 256), after initialization (--steps 0):
#   - the gathered --dump of dp=4, dp=2 x tp=2 (tp-split weights replicated
#     over dp) and ZeRO-1 equals the 1-rank --dump bit for bit;
#   - with --dump-all-ranks (the program run by mpirun) the replicas' own
#     copies are identical bit for bit (rank r and its dp peer);
#   - a pipeline (pp=2 x dp=2: the groups it lists) passes --verify, whose
#     step-1 checks compare every rank's copies.
import os
import pathlib
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Runtime",
                                "Inputs"))
import mpi_launch  # noqa: E402

work = pathlib.Path(sys.argv[1])
model = work / "llama.mlir"
subprocess.run([sys.executable, "-m", "braid.models", "llama-tiny", "--hidden", "256", "--ffn",
                "1024", "--heads", "4", "--kv-heads", "2", "--vocab", "512", "--batch", "4",
                "-o", str(model)], check=True)
failures = []


def braid_run(args, cache=None):
    env = dict(os.environ)
    if cache:
        env["BRAID_RUN_CACHE"] = str(cache)
    r = subprocess.run(["braid-run", str(model), "--quiet"] + args, capture_output=True,
                       text=True, env=env)
    if r.returncode:
        sys.exit(f"braid-run {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r.stdout


def arrays(directory, suffix=".npy"):
    return {f[:-len(suffix)]: np.load(directory / f) for f in os.listdir(directory)
            if f.endswith(suffix) and not f.startswith(("tokens", "labels", "loss"))}


one = work / "one"
braid_run(["--steps", "0", "--dump", str(one)])
reference = arrays(one)
large = [n for n, a in reference.items() if a.size >= 1 << 16]
if len(large) < 3:
    failures.append(f"only {large} reach the split's threshold: the test checks nothing")

for tag, grid in (("dp4", ["--grid", "dp=4"]), ("dp2tp2", ["--grid", "dp=2,tp=2"]),
                  ("zero1", ["--grid", "dp=4", "--zero", "1"])):
    cache = work / f"cache-{tag}"
    gathered = work / tag
    braid_run(["--steps", "0", "--dump", str(gathered)] + grid, cache=cache)
    got = arrays(gathered)
    for name, ref in reference.items():
        if name not in got:
            failures.append(f"{tag}: {name} not dumped")
        elif got[name].tobytes() != ref.tobytes():
            failures.append(f"{tag}: {name} differs from the 1-rank initialization")
    # Each rank's own copy: replicas along dp (ranks r and r + 2 on dp=2 x tp=2,
    # all four on dp=4) hold identical buffers.
    binaries = list(cache.glob("*.bin"))
    if len(binaries) != 1:
        sys.exit(f"{tag}: expected one program in {cache}, found {binaries}")
    env, launcher = mpi_launch.launcher("mpirun")
    ranks = work / f"{tag}-ranks"
    r = subprocess.run(launcher + ["-np", "4", str(binaries[0]), "--steps", "0", "--quiet",
                                   "--dump", str(ranks), "--dump-all-ranks"] + grid[:2],
                       capture_output=True, text=True, env=env)
    if r.returncode:
        sys.exit(f"{tag}: the program on 4 ranks failed:\n{r.stdout}\n{r.stderr}")
    peers = [(0, 1), (0, 2), (0, 3)] if tag != "dp2tp2" else [(0, 2), (1, 3)]
    for name in large:
        for a, b in peers:
            fa, fb = ranks / f"{name}.rank{a}.npy", ranks / f"{name}.rank{b}.npy"
            if not fa.exists() or not fb.exists():
                continue  # a ZeRO range: ranks hold different parts
            if np.load(fa).tobytes() != np.load(fb).tobytes():
                failures.append(f"{tag}: {name} differs between ranks {a} and {b}")

out = braid_run(["--grid", "pp=2,dp=2", "--steps", "1", "--verify"])
if "verify: PASS" not in out or "copies on other ranks 0 " not in out:
    failures.append(f"pp=2 x dp=2 --verify:\n{out}")

if failures:
    sys.exit("FAIL\n" + "\n".join(failures))
print(f"{len(reference)} tensors ({len(large)} split among replicas) equal on 3 grids")
