# REQUIRES: mpirun, cudasim
# UNSUPPORTED: sanitize
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# Pipeline, context and expert parallelism on GPU ranks, emulated:
# braid-run --backend cudasim --grid ... --verify runs the stage programs (or
# the partitioned program) on the CUDA backend under mpirun, with the
# runtime's NCCL communicators over cudasim's NCCL, whose sends wait for their
# receives as NCCL's may, and judges loss, gradients and updated parameters
# on every rank against the 1-rank program. 1F1B sends before it receives on
# both neighbours, interleaved chunks cross, the CP ring exchanges key blocks
# and merges their attention (the merge kernel's lse race, 2026-12-04), ZeRO-3
# gathers parameters beside the ring and the experts' all-to-all.
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "Inputs"))
sys.path.insert(0, os.path.join(here, "..", "Integration", "Inputs"))
import cudasim_verify  # noqa: E402
import verify_matrix  # noqa: E402

work = sys.argv[1]
CASES = [
    ("gpt-tiny-l5-b4", ["--grid", "pp=2", "--microbatches", "2", "--schedule", "1f1b"]),
    ("gpt-tiny-l5-b4", ["--grid", "pp=2", "--virtual-stages", "2", "--microbatches", "4",
                        "--schedule", "interleaved"]),
    ("llama-tiny-b4", ["--grid", "cp=2", "--cp-attention", "ring"]),
    ("llama-tiny-b4", ["--grid", "dp=2,cp=2", "--zero", "3", "--cp-attention", "ring",
                       "--cp-layout", "contiguous"]),
    ("moe-tiny-b4", ["--grid", "dp=2,ep=2", "--zero", "3"]),
]
cudasim_verify.run([(verify_matrix.build(work, preset), flags) for preset, flags in CASES])
