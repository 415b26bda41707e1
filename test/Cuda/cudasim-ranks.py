# REQUIRES: mpirun, cudasim
# UNSUPPORTED: sanitize
# RUN: %python %s %braid_src
#
# GPU ranks on the CPU emulation: braid-run --backend cudasim --grid ... runs
# the partitioned program's ranks under mpirun on the CUDA backend, whose
# collectives are the runtime's NCCL communicators (comm_nccl.cu: a stream per
# group, event waits between the compute and communication streams) over
# cudasim's NCCL (over MPI), and --verify judges them against the 1-rank
# program (loss, gradients, updated parameters on every rank).
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import cudasim_verify  # noqa: E402

examples = os.path.join(sys.argv[1], "examples")
cudasim_verify.run([
    (os.path.join(examples, "llama-tiny.mlir"), ["--grid", "dp=2"]),
    (os.path.join(examples, "llama-tiny.mlir"), ["--grid", "dp=2,tp=2", "--zero", "1"]),
    (os.path.join(examples, "llama-tiny.mlir"), ["--grid", "tp=2", "--sequence-parallel"]),
])
