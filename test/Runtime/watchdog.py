# REQUIRES: mpi
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %mpicxx %mpirun %braid_src %braid_rt_lib %t
#
# The transfer watchdog of the CPU ranks (runtime/src/comm_mpi_progress.h): a wait
# that blocks BRAID_COLLECTIVE_TIMEOUT seconds ends the run on every rank with
# a message naming the transfer, its group and the step, instead of hanging.
# On Inputs/overlap-program.cpp (2 ranks of dp=2), dp rank 1 computes for 5 s
# before step 2's second all-reduce:
# - with a 1 s timeout, rank 0's wait trips it: a non-zero exit, well before
#   the stalled rank would have arrived, with the all-reduce, 'dp' and step 2
#   named, with and without the progress thread;
# - with the default (600 s), the same run completes with correct results
#   (the stall is only late, not lost);
# - a timeout that is not a number is refused with a message;
# - a rank killed at step 2 (SIGKILL) ends the run at once: Open MPI's
#   launcher names the lost rank and terminates the others, which say at
#   which step they stopped (the runtime's SIGTERM report).
import os
import pathlib
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import mpi_launch  # noqa: E402

mpicxx, mpirun = sys.argv[1], sys.argv[2]
src, libdir, tmp = pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4]), pathlib.Path(sys.argv[5])
inputs = pathlib.Path(__file__).parent / "Inputs"
failures = []

env, launcher = mpi_launch.launcher(mpirun)
program = mpi_launch.build_program(tmp / "overlap", inputs / "overlap-program.cpp", [], mpicxx,
                                   src, mpi_launch.mpi_libraries(libdir), env)


def run(**extra):
    e = dict(env, OVERLAP_ELEMENTS="1024", OVERLAP_COMPUTE_MS="1", OVERLAP_STALL_RANK="1",
             **{k: str(v) for k, v in extra.items()})
    begin = time.monotonic()
    r = mpi_launch.run(launcher, e, [program, "--grid", "dp=2", "--steps", "3"], 2, 120, failures)
    return r, time.monotonic() - begin


for progress in ("1", "0"):
    r, seconds = run(BRAID_COLLECTIVE_TIMEOUT=1, BRAID_PROGRESS_THREAD=progress)
    out = r.stdout + r.stderr
    print(f"timeout 1 s, progress thread {progress}: exit {r.returncode} after {seconds:.1f} s")
    print("\n".join(line for line in out.splitlines() if "COLLECTIVE_TIMEOUT" in line))
    if r.returncode == 0:
        failures.append(f"progress {progress}: a stuck rank did not end the run")
    if "rank 0: braid_all_reduce over 'dp' at step 2 has not completed after 1 s" not in out:
        failures.append(f"progress {progress}: no watchdog message naming the transfer:\n{out}")
    if seconds > 4.5:
        failures.append(f"progress {progress}: the run took {seconds:.1f} s, past the stall")

r, seconds = run()
print(f"default timeout: exit {r.returncode} after {seconds:.1f} s")
if r.returncode != 0 or "FAIL" in r.stdout + r.stderr:
    failures.append(f"a late rank under the default timeout:\n{r.stdout}{r.stderr}")

r, _ = run(BRAID_COLLECTIVE_TIMEOUT="soon")
if r.returncode == 0 or "BRAID_COLLECTIVE_TIMEOUT='soon' is not a number" not in r.stderr:
    failures.append(f"an invalid timeout was not refused:\n{r.stderr}")

e = dict(env, OVERLAP_ELEMENTS="1024", OVERLAP_COMPUTE_MS="1", OVERLAP_KILL_RANK="1")
begin = time.monotonic()
r = mpi_launch.run(launcher, e, [program, "--grid", "dp=2", "--steps", "3"], 2, 120, failures)
seconds = time.monotonic() - begin
out = r.stdout + r.stderr
print(f"rank 1 killed at step 2: exit {r.returncode} after {seconds:.1f} s")
print("\n".join(line for line in out.splitlines() if "rank" in line and "braid:" not in line))
if r.returncode == 0 or seconds > 30:
    failures.append(f"a killed rank did not end the run at once:\n{out}")
if "--oversubscribe" in launcher:  # Open MPI's launcher
    if "process rank 1" not in out:
        failures.append(f"the launcher did not name the lost rank:\n{out}")
    if "rank 0: stopped at step 2 by SIGTERM" not in out:
        failures.append(f"the surviving rank did not say where it stopped:\n{out}")

if failures:
    print("\n".join(failures), file=sys.stderr)
    sys.exit(1)
