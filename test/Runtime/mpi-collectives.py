# REQUIRES: mpi
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %mpicxx %mpirun %cxx %braid_src %braid_rt_lib %t
#
# CPU ranks over MPI (runtime/src/comm_mpi.cpp): a hand-written program
# (Inputs/collectives-program.cpp) linked with braid_runtime_main_mpi +
# braid_runtime_mpi + braid_runtime runs as 4 MPI ranks on --grid dp=2,tp=2 and
# checks every collective (all_reduce sum/max/min in and out of place,
# all_gather, reduce_scatter, all_to_all, broadcast, send/recv) on the world, dp
# and tp communicators with f32, bf16 and i32 data on every rank; rank 0 prints
# the summary and the loss (the failure count over all ranks). Also: only rank 0
# prints and dumps by default; --all-ranks / --dump-all-ranks; one trace per
# rank; a grid whose size differs from the world fails naming both; an axis not
# in the grid and an MPI error (a truncated receive) abort naming the rank; a
# program linked with the MPI libraries behaves as before when not launched
# by mpirun or with one rank; the non-MPI main checks --grid too.
import json
import os
import pathlib
import re
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import mpi_launch  # noqa: E402

mpicxx, mpirun, cxx = sys.argv[1], sys.argv[2], sys.argv[3]
src, libdir, tmp = pathlib.Path(sys.argv[4]), pathlib.Path(sys.argv[5]), pathlib.Path(sys.argv[6])
inputs = pathlib.Path(__file__).parent / "Inputs"
failures = []


def expect(cond, message):
    if not cond:
        failures.append(message)


mpi_libs = mpi_launch.mpi_libraries(libdir)

env, launcher = mpi_launch.launcher(mpirun)


def build(name, program, variant=None, mpi=True):
    return mpi_launch.build_program(
        tmp / name, inputs / program, [f"VARIANT_{variant}"] if variant else [],
        mpicxx if mpi else cxx, src, mpi_libs if mpi else mpi_launch.serial_libraries(libdir),
        env)


with ThreadPoolExecutor(4) as pool:
    jobs = [pool.submit(build, "collectives", "collectives-program.cpp"),
            pool.submit(build, "truncate", "collectives-program.cpp", "TRUNCATE"),
            pool.submit(build, "tiny-mpi", "tiny-program.cpp"),
            pool.submit(build, "tiny", "tiny-program.cpp", mpi=False)]
    coll, trunc, tiny_mpi, tiny = [j.result() for j in jobs]


def run(cmd, ranks=None):
    return mpi_launch.run(launcher, env, cmd, ranks, 60, failures)


# --- 4 ranks on dp=2,tp=2: every collective, rank 0 prints and dumps ------------------
dump, traces = tmp / "dump", tmp / "traces"
traces.mkdir()
r = run([coll, "--grid", "dp=2,tp=2", "--steps", "2", "--dump", dump, "--trace",
         traces / "trace.json"], ranks=4)
expect(r.returncode == 0, f"collectives failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
expect(re.fullmatch(r"collectives: grid dp=2,tp=2, 4 ranks, \d+ checks per rank, 0 failures\n"
                    r"step 1 loss 0\nstep 2 loss 0\n"
                    r"planned_peak_bytes: 4\nmeasured_peak_bytes: 4\n"
                    r"(collective \w+: \d+ per step, \d+ bytes sent per rank\n)+"
                    r"collective_bytes_per_step: \d+\n", r.stdout) is not None,
       f"collectives stdout:\n{r.stdout}\nstderr:\n{r.stderr}")
m = re.search(r"(\d+) checks per rank", r.stdout)
expect(m is not None and int(m.group(1)) > 100, f"too few checks: {r.stdout!r}")
expect("FAIL" not in r.stderr, f"failed checks:\n{r.stderr}")
expect(r.stderr.count("braid: collectives on cpu") == 1 and
       "grid dp=2,tp=2 (4 ranks, mpi)" in r.stderr, f"progress lines: {r.stderr!r}")
files = sorted(p.name for p in dump.glob("*.npy"))
expect(files == ["loss.npy", "rank_value.npy"], f"rank-0 dump files {files}")
if (dump / "rank_value.npy").exists():
    expect(np.load(dump / "rank_value.npy").tolist() == [0.0], "rank_value.npy is not rank 0's")
names = sorted(p.name for p in traces.iterdir())
expect(names == [f"trace.rank{k}.json" for k in range(4)], f"trace files {names}")
for k in range(4):
    path = traces / f"trace.rank{k}.json"
    if path.exists():
        ev = json.load(open(path)).get("traceEvents", [])
        expect([(e["name"], e["args"]["label"], e["args"]["step"]) for e in ev
                if e["ph"] == "X" and e["cat"] == "kernel"] ==
               [("all_reduce", "overlap", 1), ("all_reduce", "overlap", 2)]
               and all(e["pid"] == k for e in ev), f"trace of rank {k}: {ev}")
        # The three waits of the "overlap" op lie inside it on the compute
        # lane, in the program's order; each transfer lies on its group's lane.
        kernels = [e for e in ev if e["ph"] == "X" and e["cat"] == "kernel"]
        waits = [e for e in ev if e["ph"] == "X" and e["cat"] == "wait"]
        comm = [e for e in ev if e["ph"] == "X" and e["cat"] == "comm"]
        for op in kernels:
            inside = [w["args"]["label"] for w in waits
                      if op["ts"] <= w["ts"] and w["ts"] + w["dur"] <= op["ts"] + op["dur"]]
            expect(inside == ["all_reduce over world", "all_gather over dp", "all_reduce over tp"],
                   f"rank {k}: waits inside {op}: {inside}")
        lanes = {e["args"]["name"]: e["tid"] for e in ev
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        expect(lanes.get("compute") == 0 and
               sorted(lanes) == ["comm dp", "comm tp", "comm world", "compute"],
               f"rank {k}: lanes {lanes}")
        # One transfer per wait, on its group's lane, ending no earlier than
        # it began.
        expect(all(e["tid"] == lanes.get("comm " + e["args"]["group"]) and e["dur"] >= 0
                   for e in comm) and len(comm) == len(waits),
               f"rank {k}: {len(comm)} communication events for {len(waits)} waits: {comm[:4]}")

# --- --all-ranks, --dump-all-ranks ----------------------------------------------------
dump2 = tmp / "dump-all"
r = run([coll, "--grid", "dp=2,tp=2", "--all-ranks", "--dump-all-ranks", "--dump", dump2,
         "--quiet"], ranks=4)
expect(r.returncode == 0, f"--all-ranks failed ({r.returncode}):\n{r.stderr}")
lines = r.stdout.splitlines()
for k in range(4):
    for want in (f"rank {k}: step 1 loss 0", f"rank {k}: planned_peak_bytes: 4",
                 f"rank {k}: measured_peak_bytes: 4"):
        expect(lines.count(want) == 1, f"--all-ranks: no line {want!r} in {lines}")
expect(r.stderr == "", f"--all-ranks --quiet stderr: {r.stderr!r}")
files = sorted(p.name for p in dump2.glob("*.npy"))
expect(files == sorted([f"{n}.rank{k}.npy" for n in ("loss", "rank_value") for k in range(4)]),
       f"--dump-all-ranks files {files}")
for k in range(4):
    path = dump2 / f"rank_value.rank{k}.npy"
    if path.exists():
        expect(np.load(path).tolist() == [float(k)], f"{path.name}: {np.load(path)}")

# --- failures -----------------------------------------------------------------------
r = run([coll, "--grid", "dp=3"], ranks=4)
expect(r.returncode != 0 and "grid dp=3 has 3 ranks but the MPI world has 4 ranks" in r.stderr
       and r.stdout == "", f"grid mismatch: {r.returncode} {r.stdout!r} {r.stderr!r}")
r = run([coll, "--grid", "dp=4", "--quiet"], ranks=4)
expect(r.returncode != 0 and re.search(r"braid runtime: rank \d: braid_rt_comm: unknown axis "
                                       r"'tp' in 'tp' \(grid dp=4\)", r.stderr),
       f"unknown axis: {r.returncode} {r.stderr!r}")
r = run([trunc, "--grid", "dp=2,tp=2", "--quiet"], ranks=4)
expect(r.returncode != 0 and re.search(r"braid runtime: rank [13]: braid_recv on 'tp': MPI error: "
                                       r"MPI_ERR_TRUNCATE", r.stderr),
       f"truncated receive: {r.returncode} {r.stderr!r}")
r = run([coll, "--grid", "dp=2,tp=x"], ranks=1)
expect(r.returncode == 2 and "axis tp needs a positive size" in r.stderr,
       f"bad grid: {r.returncode} {r.stderr!r}")

# --- one rank: the MPI build behaves as the plain one ---------------------------------
base = run([tiny, "--seed", "1234", "--steps", "2"])
expect(base.returncode == 0 and base.stdout.startswith("step 1 loss "), f"tiny: {base}")
for cmd, ranks in (([tiny_mpi], None), ([tiny_mpi], 1),
                   ([tiny_mpi, "--grid", "dp=1,tp=1"], 1), ([tiny, "--grid", "dp=1,tp=1"], None)):
    r = run(cmd + ["--seed", "1234", "--steps", "2"], ranks=ranks)
    expect(r.returncode == 0 and r.stdout == base.stdout,
           f"{cmd} on {ranks or 'no launcher'}: {r.returncode} {r.stdout!r} vs {base.stdout!r} "
           f"{r.stderr!r}")
r = run([tiny, "--grid", "dp=2"])
expect(r.returncode == 2 and "grid dp=2 has 2 ranks but this process runs 1 rank (built without "
       "MPI" in r.stderr, f"non-MPI --grid dp=2: {r.returncode} {r.stderr!r}")
r = run([tiny, "--grid", "x=1", "--quiet"])
expect(r.returncode != 0 and "braid_rt_comm: unknown axis 'dp' in 'dp,tp' (grid x=1)" in r.stderr,
       f"non-MPI unknown axis: {r.returncode} {r.stderr!r}")

for f in failures:
    print(f)
print("ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
