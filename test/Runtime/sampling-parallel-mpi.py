# REQUIRES: mpi
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %mpicxx %mpirun %braid_src %braid_rt_lib %t
#
# Sampling logits split by vocabulary over real MPI ranks: the cases of
# sampling-parallel.test (Inputs/sampling-parallel-test.cpp built with
# BRAID_TEST_MPI) through sampleTokensParallel's Communicator form (the CPU
# backend's buffers all-gathered by braid_runtime_mpi) on 2, 3 and 4 ranks
# of the grid tp=N, each rank's tokens equal to sampleToken's on the whole
# row; the even blocks come from vocabBlockOf (an output's layout over tp).
import os
import pathlib
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import mpi_launch  # noqa: E402

mpicxx, mpirun = sys.argv[1], sys.argv[2]
src, libdir, tmp = pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4]), pathlib.Path(sys.argv[5])
failures = []
env, launcher = mpi_launch.launcher(mpirun)
libs = mpi_launch.mpi_libraries(libdir)[1:]  # the communicators and the core, no main()
exe = tmp / "sampling-parallel-mpi"
rt = src / "runtime" / "src"
subprocess.run([mpicxx, "-std=c++17", "-O1", "-DBRAID_TEST_MPI", f"-I{rt}",
                f"-I{src / 'runtime' / 'include'}",
                str(src / "test" / "Runtime" / "Inputs" / "sampling-parallel-test.cpp"),
                str(rt / "sampling.cpp"), str(rt / "sampling_parallel.cpp"),
                *[str(p) for p in libs], "-lpthread", "-o", str(exe)], check=True, env=env)
for ranks in (2, 3, 4):
    r = mpi_launch.run(launcher, env, [exe], ranks, 60, failures)
    want = rf"sampling-parallel-mpi: \d+ rows checked on {ranks} ranks, 0 differences\n"
    if r.returncode != 0 or not re.fullmatch(want, r.stdout):
        failures.append(f"{ranks} ranks (status {r.returncode}):\n{r.stdout}\n{r.stderr[-3000:]}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("sampling-parallel-mpi: ok on 2, 3, 4 ranks")
