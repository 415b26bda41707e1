# REQUIRES: nvcc
# RUN: %python %s %braid_src %braid_obj
#
# The CUDA backend must compile wherever CUDA is installed, even on machines
# without a GPU (CI): every runtime/src/cuda/*.cu is compiled for sm_90 with
# the flags of runtime/cuda.cmake (nvcc, host compiler g++-12) and nvcc's
# warnings as errors. A build configured with BRAID_CUDA_WERROR=ON
# (tools/braid-dev) has done exactly that for braid-run: then this checks that
# its libraries hold an object of every source instead of compiling them
# again. Reported UNSUPPORTED by lit without nvcc; fails on any compile error
# with it. Set BRAID_NVCC to use another nvcc.

import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time

src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                      os.path.join(os.path.dirname(__file__), "..", ".."))
nvcc = os.environ.get("BRAID_NVCC") or "/usr/local/cuda/bin/nvcc"
if not os.path.exists(nvcc):
    nvcc = shutil.which("nvcc") or ""
if not nvcc:
    print("FAIL: nvcc not found (lit's nvcc feature says it is there)")
    sys.exit(1)

cuda_dir = os.path.join(src, "runtime", "src", "cuda")
sources = sorted(f for f in os.listdir(cuda_dir) if f.endswith(".cu"))
if not sources:
    print(f"FAIL: no .cu files in {cuda_dir}")
    sys.exit(1)


def built_with_werror(obj):
    """The object files in the build's CUDA libraries where it compiled them
    with nvcc's warnings as errors (BRAID_CUDA_WERROR); None otherwise."""
    try:
        cache = open(os.path.join(obj, "CMakeCache.txt")).read().splitlines()
    except OSError:
        return None
    if "BRAID_CUDA_WERROR:BOOL=ON" not in cache:
        return None
    members = set()
    for lib in ("libbraid_kernels_cuda.a", "libbraid_comm_nccl.a"):
        path = os.path.join(obj, "lib", lib)
        if os.path.exists(path):
            listing = subprocess.run(["ar", "t", path], capture_output=True, text=True)
            members.update(listing.stdout.split())
    return members


members = built_with_werror(sys.argv[2]) if len(sys.argv) > 2 else None
if members is not None:
    missing = [name for name in sources if name + ".o" not in members]
    if missing:
        print(f"FAIL: the build's CUDA libraries hold no object of {', '.join(missing)}")
        sys.exit(1)
    print(f"{len(sources)}/{len(sources)} CUDA sources compiled by the build "
          "with -Werror all-warnings")
    sys.exit(0)

flags = ["-std=c++17", "-ccbin", os.environ.get("BRAID_CUDA_HOST_CXX", "g++-12"),
         "-gencode", "arch=compute_90,code=sm_90",
         "-I", os.path.join(src, "runtime", "include"), "-I", os.path.join(src, "runtime", "src"),
         "-DBRAID_RUNTIME_CUDA", "-Werror", "all-warnings", "-c"]


def compile_one(name, out_dir):
    start = time.monotonic()
    cmd = [nvcc, *flags, os.path.join(cuda_dir, name),
           "-o", os.path.join(out_dir, name + ".o")]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return name, proc.returncode, proc.stdout, time.monotonic() - start


jobs = int(os.environ.get("BRAID_CUDA_COMPILE_JOBS", "2"))
failed = []
start = time.monotonic()
with tempfile.TemporaryDirectory(prefix="braid-cuda-") as out_dir, \
        concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
    for name, rc, output, seconds in pool.map(lambda n: compile_one(n, out_dir), sources):
        if rc == 0:
            print(f"compiled {name} ({seconds:.1f} s)")
        else:
            print(f"FAILED {name} (exit {rc}):\n{output}")
            failed.append(name)
print(f"{len(sources) - len(failed)}/{len(sources)} CUDA sources compiled with {nvcc} "
      f"in {time.monotonic() - start:.1f} s ({jobs} jobs)")
sys.exit(1 if failed else 0)
