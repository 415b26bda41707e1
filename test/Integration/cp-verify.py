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
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import verify_matrix  # noqa: E402

work = sys.argv[1]

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

_, failures = verify_matrix.run(work, MATRIX)

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
