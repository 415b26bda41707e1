# braid/codegen.h: the emitter's example of a fused elementwise kernel (and
# every other name of the contract) compiles unchanged with the host
# compilers (test/Cuda/codegen-header.py: with nvcc, as host C++ and as CUDA).
# Running the fused code on the CPU and comparing it bit for bit with the
# kernels is in cpu-kernels.py.
#
# RUN: %python %s %braid_src %t

import os
import shutil
import subprocess
import sys

src_root, tmp = sys.argv[1], sys.argv[2]
os.makedirs(tmp, exist_ok=True)
example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs", "codegen-example.cpp")
include = "-I" + os.path.join(src_root, "runtime", "include")


def compile_ok(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAILED: {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    print("ok:", " ".join(cmd))


compile_ok(["c++", "-std=c++17", "-Wall", "-Wextra", "-Werror", include, "-c", example,
            "-o", os.path.join(tmp, "host.o")])
if shutil.which("clang++"):
    compile_ok(["clang++", "-std=c++17", "-Wall", "-Wextra", "-Werror", include, "-c", example,
                "-o", os.path.join(tmp, "clang.o")])
