# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# Context parallelism, differentially: on N CPU ranks with the sequence
# split over cp, 2 AdamW steps equal the unpartitioned program on one rank
# (loss, gradients, updated parameters within 1e-5, fp32; AdamW eps 1e-5 for
# the reason spmd-verify.py gives). Attention gathers keys and values
# (allgather: queries keep their chunk and global positions for RoPE and the
# causal mask) or moves the split from the sequence to the heads (ulysses).
# Mamba keeps its chunk too: the convolution takes a (kernel-1)-token halo
# from the previous rank, the selective scan starts from the state the
# previous ranks leave (their final states and decays, all-gathered and
# composed: an exclusive scan across ranks), and the backward sends the
# halo's cotangent back and composes the state cotangents the same way.
import os
import subprocess
import sys
import time

work = sys.argv[1]
failures = []


def model(preset, *flags):
    path = os.path.join(work, preset + "".join(flags).replace("-", "_") + ".mlir")
    with open(path, "w") as f:
        f.write(subprocess.run([sys.executable, "-m", "braid.models", preset, *flags],
                               check=True, capture_output=True, text=True).stdout)
    return path


MATRIX = []
for variant in ["allgather", "ulysses"]:
    cp = ["--cp-attention", variant]
    MATRIX += [
        ("llama-tiny", ["--grid", "cp=2", *cp]),
        ("llama-tiny", ["--grid", "cp=4", *cp]),
        ("llama-tiny", ["--grid", "cp=2,tp=2", *cp]),
        ("llama-tiny", ["--grid", "dp=2,cp=2", *cp]),
    ]
MATRIX += [
    ("gpt-tiny", ["--grid", "cp=2"]),
    ("mamba-tiny", ["--grid", "cp=2"]),
    ("mamba-tiny", ["--grid", "cp=4"]),
    ("mamba-tiny", ["--grid", "cp=2,tp=2"]),
    ("hybrid-tiny", ["--grid", "cp=2,tp=2"]),
]

paths = {}
for preset, flags in MATRIX:
    if preset not in paths:
        name, extra = preset, []
        if preset.endswith("-b4"):  # batch 4: split over dp x ep = 4
            name, extra = preset[:-3], ["--batch", "4"]
        if name in ("moe-tiny", "hybrid-tiny"):
            extra += ["--capacity-factor", "4"]
        paths[preset] = model(name, *extra)
    start = time.time()
    r = subprocess.run(["braid-run", paths[preset], "--steps", "2", "--eps", "1e-5",
                        "--verify", "--quiet", *flags],
                       capture_output=True, text=True)
    lines = [l for l in r.stdout.splitlines() if l.startswith("verify:")]
    label = f"{preset} {' '.join(flags)}"
    print(f"{label}: {'; '.join(l[8:] for l in lines)} ({time.time() - start:.1f} s)")
    if r.returncode != 0 or "verify: PASS" not in lines:
        failures.append(f"{label}: exit {r.returncode}\n{r.stdout}{r.stderr}")

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
