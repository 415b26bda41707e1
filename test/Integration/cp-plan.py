# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t | FileCheck %s
#
# Context parallelism's two planned figures for a long-sequence model
# (llama-tiny with 2048 positions, 2 layers), from the compiler's own
# printers:
# - memory: the per-rank activation bytes of the static plan (arena minus
#   persistent tensors, --braid-print-memory-plan of the whole training
#   step) fall as 1/cp. Ring attention keeps every tensor a chunk, so it
#   stays within 15% of 1/cp up to cp=8; all-gather holds each layer's
#   gathered keys and values (whole-sequence tensors), so it falls more
#   slowly, and the test checks that it does (the measure can tell them
#   apart). Ulysses holds whole-sequence tensors of a share of the heads.
# - balance: the busiest rank's causal attention FLOPs over the mean
#   (--braid-print-plan, counted from each stored row's position). Zigzag
#   order (rank i holds chunks i and 2cp-1-i) is within 5% of the mean at
#   cp=2, 4, 8; contiguous chunks are 2 - 1/cp (1.5, 1.75, 1.875).
import os
import re
import subprocess
import sys

work = sys.argv[1]
model = os.path.join(work, "llama-long.mlir")
with open(model, "w") as f:
    f.write(subprocess.run([sys.executable, "-m", "braid.models", "llama-tiny", "--seq", "2048",
                            "--layers", "2"], check=True, capture_output=True, text=True).stdout)


def figures(*passes):
    out = subprocess.run(["braid-opt", model, *passes, "-o", os.devnull], check=True,
                         capture_output=True, text=True).stdout
    return {m.group(1): float(m.group(2))
            for m in re.finditer(r"^([a-z_/ ]+): ([0-9.]+)$", out, re.M)}


def activations(cp, attention):
    f = figures(f"--braid-training-pipeline=grid=cp={cp} cp-attention={attention}",
                "--braid-print-memory-plan")
    return f["arena_bytes"] - f["persistent_bytes"]


failures = []
base = activations(1, "ring")
print(f"activation bytes per rank, cp=1: {base:.0f}")
# CHECK: activation bytes per rank, cp=1:
for attention, heads_limit in [("ring", 8), ("allgather", 8), ("ulysses", 4)]:
    for cp in [2, 4, 8]:
        if cp > heads_limit:
            continue  # llama-tiny has 4 heads: Ulysses splits them over at most 4
        a = activations(cp, attention)
        ratio = a / base
        print(f"{attention} cp={cp}: {a:.0f} bytes, {ratio:.3f} of cp=1 (1/cp = {1 / cp:.3f})")
        if attention == "ring" and ratio > 1.15 / cp:
            failures.append(f"ring cp={cp}: {ratio:.3f} of cp=1, more than 1.15/cp")
        if attention == "allgather" and cp == 8 and ratio < 1.5 / cp:
            failures.append(f"allgather cp=8: {ratio:.3f}, expected the gathered keys "
                            "and values to keep it above 1.5/cp")
# CHECK: ring cp=2: {{.*}} of cp=1 (1/cp = 0.500)
# CHECK: ring cp=8: {{.*}} of cp=1 (1/cp = 0.125)
# CHECK: allgather cp=8:
# CHECK: ulysses cp=4:

for cp in [2, 4, 8]:
    for layout in ["zigzag", "contiguous"]:
        f = figures(f"--braid-partition=grid=cp={cp} cp-attention=ring cp-layout={layout}",
                    "--braid-print-plan")
        busiest = f["attention_flops busiest/mean"]
        print(f"{layout} cp={cp}: busiest/mean attention FLOPs {busiest:.3f}")
        if layout == "zigzag" and busiest > 1.05:
            failures.append(f"zigzag cp={cp}: busiest/mean {busiest:.3f} > 1.05")
        if layout == "contiguous" and abs(busiest - (2 - 1 / cp)) > 1e-3:
            failures.append(f"contiguous cp={cp}: busiest/mean {busiest:.3f}, "
                            f"expected {2 - 1 / cp:.3f}")
# CHECK: zigzag cp=2: busiest/mean attention FLOPs 1.000
# CHECK: contiguous cp=2: busiest/mean attention FLOPs 1.500
# CHECK: zigzag cp=4: busiest/mean attention FLOPs 1.000
# CHECK: contiguous cp=4: busiest/mean attention FLOPs 1.750
# CHECK: zigzag cp=8: busiest/mean attention FLOPs 1.000
# CHECK: contiguous cp=8: busiest/mean attention FLOPs 1.875

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
print("PASS")
# CHECK: PASS
