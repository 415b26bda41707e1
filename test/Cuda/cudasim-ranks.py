# REQUIRES: mpirun
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
import subprocess
import sys

examples = os.path.join(sys.argv[1], "examples")
CASES = [
    ("llama-tiny.mlir", ["--grid", "dp=2"]),
    ("llama-tiny.mlir", ["--grid", "dp=2,tp=2", "--zero", "1"]),
    ("llama-tiny.mlir", ["--grid", "tp=2", "--sequence-parallel"]),
]
failed = []
for name, flags in CASES:
    r = subprocess.run(["braid-run", os.path.join(examples, name), "--backend", "cudasim",
                        *flags, "--steps", "2", "--verify"], capture_output=True, text=True,
                       timeout=600)
    out = r.stdout + r.stderr
    ok = r.returncode == 0 and "verify: PASS" in out and "on cuda" in out
    print(f"cudasim {name} {' '.join(flags)}:", "PASS" if ok else "FAILED")
    if not ok:
        failed.append(f"{name} {flags}: exit {r.returncode}\n{out[-3000:]}")
if failed:
    print("\n".join(failed))
    sys.exit(1)
