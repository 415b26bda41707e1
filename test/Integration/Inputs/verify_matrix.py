"""Runs braid-run --verify over a matrix of (preset, flags): the shared body of
the differential tests (spmd-verify.py, cp-verify.py, pipeline-verify.py).

Presets are built with the Python builder; MoE presets (and the hybrid) with
capacity factor 4, so that no token is dropped on either side (capacity is
per data shard and micro-batch); suffixes "-b<N>", "-l<N>" and "-s<N>" build
batch N, N layers and sequence length N.
Every run is 2 AdamW steps with eps 1e-5 (spmd-verify.py says why).
"""
import os
import subprocess
import sys
import time


def build(work, preset):
    name, extra = preset, []
    # Suffixes, in any order: -b<N> batch N, -l<N> N layers, -s<N> sequence N.
    flag = {"b": "--batch", "l": "--layers", "s": "--seq"}
    while True:
        stem, _, suffix = name.rpartition("-")
        if suffix[:1] in flag and suffix[1:].isdigit():
            extra += [flag[suffix[0]], suffix[1:]]
            name = stem
        else:
            break
    if name in ("moe-tiny", "hybrid-tiny"):
        extra += ["--capacity-factor", "4"]
    path = os.path.join(work, preset + ".mlir")
    with open(path, "w") as f:
        f.write(subprocess.run([sys.executable, "-m", "braid.models", name, *extra],
                               check=True, capture_output=True, text=True).stdout)
    return path


def run(work, matrix):
    """Prints one line per case; returns the built models by preset and the
    failures."""
    paths, failures = {}, []
    for preset, flags in matrix:
        if preset not in paths:
            paths[preset] = build(work, preset)
        start = time.time()
        r = subprocess.run(["braid-run", paths[preset], "--steps", "2", "--eps", "1e-5",
                            "--verify", "--quiet", *flags],
                           capture_output=True, text=True)
        lines = [l for l in r.stdout.splitlines() if l.startswith("verify:")]
        label = f"{preset} {' '.join(flags)}"
        print(f"{label}: {'; '.join(l[8:] for l in lines)} ({time.time() - start:.1f} s)")
        if r.returncode != 0 or "verify: PASS" not in lines:
            failures.append(f"{label}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return paths, failures
