# REQUIRES: nvcc
# RUN: %python %s %braid_src
#
# The CUDA variant of an emitted program builds with nvcc for sm_90 (no GPU is
# needed to compile it): braid-run --backend cuda --compile-only on moe-tiny.
import os
import subprocess
import sys

model = os.path.join(sys.argv[1], "examples", "moe-tiny.mlir")
r = subprocess.run(["braid-run", model, "--backend", "cuda", "--compile-only"],
                   capture_output=True, text=True)
print("cuda build:", "ok" if r.returncode == 0 else "FAILED")
if r.returncode != 0:
    sys.exit(f"nvcc build of the emitted program failed:\n{r.stdout}{r.stderr}")
