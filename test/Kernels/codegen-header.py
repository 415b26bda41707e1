# braid/codegen.h: the emitter's example of a fused elementwise kernel (and
# every other name of the contract) compiles unchanged with the host
# compilers (test/Cuda/codegen-header.py: with nvcc, as host C++ and as CUDA).
# Running the fused code on the CPU and comparing it bit for bit with the
# kernels is in cpu-kernels.py.
#
# RUN: %python %s %braid_src %t

import os
import shutil
import sys

src_root, tmp = sys.argv[1], sys.argv[2]
os.makedirs(tmp, exist_ok=True)
example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs", "codegen-example.cpp")
include = "-I" + os.path.join(src_root, "runtime", "include")
sys.path.insert(0, os.path.join(src_root, "test", "Kernels", "Inputs"))
from compile_check import compile_ok  # noqa: E402


compile_ok(["c++", "-std=c++17", "-Wall", "-Wextra", "-Werror", include, "-c", example,
            "-o", os.path.join(tmp, "host.o")])
if shutil.which("clang++"):
    compile_ok(["clang++", "-std=c++17", "-Wall", "-Wextra", "-Werror", include, "-c", example,
                "-o", os.path.join(tmp, "clang.o")])
