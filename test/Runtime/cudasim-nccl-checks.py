# REQUIRES: mpirun, cudasim
# RUN: %python %s %braid_rt_bin/cudasim-nccl-cases mpirun
#
# cudasim's NCCL (over MPI) holds a send until its receive has started, as
# NCCL may, so a pattern that would hang on GPUs fails here, with the
# operation named, instead of passing on MPI's buffered small sends
# (runtime/cudasim/test/nccl_cases.cpp): two ranks that each send to the
# other before receiving, as lone calls on one communicator, are reported as
# a deadlock; the same transfers in one NCCL group, or with each direction on
# a communicator and stream of its own (the runtime's edge communicators,
# runtime/src/cuda/comm_nccl.h), pass and deliver the peer's values.
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import mpi_launch  # noqa: E402

program, mpirun = sys.argv[1], sys.argv[2]
env, prefix = mpi_launch.launcher(mpirun)
env["BRAID_CUDASIM_NCCL_TIMEOUT"] = "5"
failures = []
for case, passes in [("crossed-grouped", True), ("crossed-edges", True), ("crossed", False)]:
    r = subprocess.run(prefix + ["-np", "2", program, case], capture_output=True, text=True,
                       env=env, timeout=120)
    out = r.stdout + r.stderr
    if passes:
        ok = r.returncode == 0 and out.count("received its peer's values") == 2
    else:
        ok = (r.returncode != 0 and "ncclSend of 1024 bytes with rank" in out
              and "has waited 5 s: a deadlock" in out)
    print(f"{case}: {'as expected' if ok else 'UNEXPECTED'}")
    if not ok:
        failures.append(f"{case}: exit {r.returncode}\n{out[-2000:]}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
