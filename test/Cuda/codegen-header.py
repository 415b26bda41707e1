# REQUIRES: nvcc
# RUN: %python %s %braid_src %t
#
# braid/codegen.h with nvcc: the emitter's example of a fused elementwise
# kernel compiles both as host C++ (a .cpp: the CPU loop) and as CUDA (-x cu:
# a __global__ kernel on the runtime's compute stream). No GPU is needed:
# compiling is the check (the host compilers: test/Kernels/codegen-header.py).

import os
import shutil
import subprocess
import sys

src_root, tmp = sys.argv[1], sys.argv[2]
os.makedirs(tmp, exist_ok=True)
example = os.path.join(src_root, "test", "Kernels", "Inputs", "codegen-example.cpp")
include = "-I" + os.path.join(src_root, "runtime", "include")
sys.path.insert(0, os.path.join(src_root, "test", "Kernels", "Inputs"))
from compile_check import compile_ok  # noqa: E402


nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
if nvcc is None:
    sys.exit("FAILED: nvcc not found (lit's nvcc feature says it is there)")
ccbin = ["-ccbin", "g++-12"] if shutil.which("g++-12") else []
base = [nvcc, "-std=c++17", *ccbin, "-gencode", "arch=compute_90,code=sm_90", include,
        "-Werror", "all-warnings", "-Xcompiler", "-Wall,-Wextra"]
compile_ok(base + ["-c", example, "-o", os.path.join(tmp, "nvcc-host.o")])
compile_ok(base + ["-x", "cu", "-c", example, "-o", os.path.join(tmp, "nvcc-cuda.o")])
# The CUDA build holds the fused kernels as __global__ functions.
nm = subprocess.run(["nm", "-C", os.path.join(tmp, "nvcc-cuda.o")], capture_output=True,
                    text=True).stdout
assert "braid::detail::elementwise_kernel" in nm, nm
print("device kernels present")
