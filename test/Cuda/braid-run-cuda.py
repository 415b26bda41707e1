# REQUIRES: nvcc
# RUN: %python %s %braid_src
#
# The CUDA variant of an emitted program builds with nvcc for sm_90 (no GPU is
# needed to compile it): braid-run --backend cuda --compile-only on moe-tiny,
# and on plans whose protocols --convert-braid-to-dist expands (ring
# attention's shifts, Mamba's halo and carry, vocabulary-parallel loss and a
# ZeRO-1 update, all-gather context parallelism).
import os
import subprocess
import sys

examples = os.path.join(sys.argv[1], "examples")
CASES = [
    ("moe-tiny.mlir", []),
    ("llama-tiny.mlir", ["--grid", "cp=2", "--cp-attention", "ring"]),
    ("llama-tiny.mlir", ["--grid", "dp=2,tp=2", "--zero", "1"]),
    ("llama-tiny.mlir", ["--grid", "cp=2", "--cp-attention", "allgather",
                         "--cp-layout", "contiguous"]),
    ("mamba-tiny.mlir", ["--grid", "cp=2"]),
]
failed = []
for name, flags in CASES:
    model = os.path.join(examples, name)
    r = subprocess.run(["braid-run", model, *flags, "--backend", "cuda", "--compile-only"],
                       capture_output=True, text=True)
    print(f"cuda build {name} {' '.join(flags)}:", "ok" if r.returncode == 0 else "FAILED")
    if r.returncode != 0:
        failed.append(f"{name} {flags}:\n{r.stdout}{r.stderr}")
if failed:
    sys.exit("nvcc build of an emitted program failed:\n" + "\n".join(failed))
