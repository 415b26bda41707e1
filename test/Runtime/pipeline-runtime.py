# REQUIRES: mpi
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %mpicxx %mpirun %braid_src %braid_rt_lib %t
#
# Pipeline stages as separate programs (MPMD; braid_program.stage_axis, stage,
# comm_groups, braid_tensor_desc.mirror). Inputs/pipeline-stage.cpp built with
# -DSTAGE=0 and -DSTAGE=1 runs on the grid pp=2,dp=2 as
#   mpirun -np 2 stage0 ARGS : -np 2 stage1 ARGS
# - both stages send a 4 MiB message and a small one to each other before
#   receiving, and reuse the sent buffers at once (a send that waited for its
#   receive would deadlock: the run would time out); the data arrives intact
#   and in order (loss 0: no failed check on any rank);
# - each stage leader dumps its own tensors into the shared --dump directory:
#   a parameter split over dp gathered over the stage group with the global
#   content of rng.py, a replicated one, a sharded value, updated.<name>;
# - the mirror `tied` (stage 1's copy starts and evolves differently) is
#   dumped by stage 0 only and loss.npy by rank 0 only: tied.npy and
#   updated.tied.npy are stage 0's; given a --dump directory of its own,
#   stage 1's leader writes exactly its own tensors there (no tied, no loss);
#   with --dump-all-ranks stage 1's ranks write no tied file at all;
# - rank 0 prints the step and peak lines, each stage leader its
#   "stage S: planned_peak_bytes: P measured_peak_bytes: M" line;
# - one trace per rank on one clock: pid = the world rank, a process_name,
#   the kernels nested inside their "pipeline" op, timestamps between the
#   launcher's start and end on CLOCK_MONOTONIC;
# - launched in the wrong order (stage 1's program on pp coordinate 0) the run
#   fails with the stage error, without hanging.
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))

import numpy as np  # noqa: E402

from braid_ref import rng  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import mpi_launch  # noqa: E402

mpicxx, mpirun = sys.argv[1], sys.argv[2]
src, libdir, tmp = pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4]), pathlib.Path(sys.argv[5])
program = pathlib.Path(__file__).parent / "Inputs" / "pipeline-stage.cpp"
failures = []


def expect(cond, message):
    if not cond:
        failures.append(message)


mpi_libs = mpi_launch.mpi_libraries(libdir)

env, launcher = mpi_launch.launcher(mpirun)


def build(stage):
    return mpi_launch.build_program(tmp / f"stage{stage}", program, [f"STAGE={stage}"], mpicxx,
                                    src, mpi_libs, env)


with ThreadPoolExecutor(2) as pool:
    stage0, stage1 = pool.map(build, (0, 1))


def run(first, second, args, second_args=None):
    """mpirun -np 2 FIRST ARGS : -np 2 SECOND ARGS (SECOND_ARGS when given); a
    hang is killed (the whole process group: mpirun and its ranks) and reported."""
    cmd = [*launcher, "-np", "2", first, *args, ":", "-np", "2", second,
           *(args if second_args is None else second_args)]
    cmd = [str(c) for c in cmd]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        failures.append(f"timed out (deadlock?): {' '.join(cmd)}\n{out}\n{err}")
        return subprocess.CompletedProcess(cmd, 124, out, err)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


SEED = 7
ARGS = ["--seed", str(SEED), "--steps", "2", "--quiet"]
f32 = np.float32


def init(name, shape, kind, std):
    return rng.param_values(SEED, name, shape, kind, std, "f32", exact=True)


# The global tensors after init and after two steps (f32 arithmetic as in the program).
w0, w1 = init("s0.w", (6, 5), "normal", 0.5), init("s1.w", (5, 7), "normal", 1.0)
tied0, tied1 = init("tied", (4, 3), "normal", 0.5), init("tied", (4, 3), "normal", 2.0)
up_w0 = w0 * f32(4)
up_w1 = w1 * f32(0.25)
up_tied0 = (tied0 + f32(1)) + f32(1)
up_tied1 = (tied1 * f32(-3)) * f32(-3)
WANT = {
    "s0.w": w0, "tied": tied0, "updated.s0.w": up_w0, "updated.tied": up_tied0,
    "x0": f32(3) * up_w0,
    "s1.w": w1, "s1.r": np.ones(3, f32), "updated.s1.w": up_w1,
    "updated.s1.r": np.full(3, 3, f32), "x1": up_w1 + f32(1),
    "loss": np.array(0, f32),
}
expect(not np.array_equal(tied0, tied1) and not np.array_equal(up_tied0, up_tied1),
       "the two stages' copies of the mirror do not differ")

# --- the pipeline: exchange, dumps, peak lines, traces ------------------------------------
dump, traces = tmp / "dump", tmp / "traces"
traces.mkdir()
start = time.monotonic()
r = run(stage0, stage1, [*ARGS, "--dump", dump, "--trace", traces / "trace.json"])
end = time.monotonic()
expect(r.returncode == 0, f"pipeline run failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
expect("FAIL" not in r.stderr, f"failed checks:\n{r.stderr}")
lines = r.stdout.splitlines()
expect(lines.count("step 1 loss 0") == 1 and lines.count("step 2 loss 0") == 1,
       f"step lines (rank 0 only, no failures):\n{r.stdout}")
peaks = {}
for s in (0, 1):
    found = [m.groups() for m in (re.fullmatch(rf"stage {s}: planned_peak_bytes: (\d+) "
                                                rf"measured_peak_bytes: (\d+)", x) for x in lines)
             if m]
    expect(len(found) == 1 and found[0][0] == found[0][1],
           f"stage {s}: want one peak line with equal peaks:\n{r.stdout}")
    peaks[s] = found[0][0] if found else None
planned = re.findall(r"^planned_peak_bytes: (\d+)$", r.stdout, re.M)
measured = re.findall(r"^measured_peak_bytes: (\d+)$", r.stdout, re.M)
expect(planned == [peaks[0]] and measured == [peaks[0]] and peaks[0] != peaks[1],
       f"rank 0 prints stage 0's peaks once (stage peaks {peaks}):\n{r.stdout}")

names = sorted(p.name[:-4] for p in dump.glob("*.npy"))
expect(names == sorted(WANT), f"dump files {names}, expected {sorted(WANT)}")
for name, want in WANT.items():
    path = dump / f"{name}.npy"
    if path.exists():
        got = np.load(path)
        expect(got.dtype == want.dtype and got.shape == want.shape and
               got.tobytes() == want.tobytes(), f"{name}.npy:\n{got}\nexpected\n{want}")
if (dump / "tied.npy").exists():
    expect(not np.array_equal(np.load(dump / "tied.npy"), tied1), "tied.npy is stage 1's")

trace_files = sorted(p.name for p in traces.iterdir())
expect(trace_files == [f"trace.rank{k}.json" for k in range(4)], f"trace files {trace_files}")
merged = []
for k in range(4):
    path = traces / f"trace.rank{k}.json"
    if not path.exists():
        continue
    events = json.load(open(path))["traceEvents"]
    merged += events
    expect(all(e["pid"] == k for e in events), f"rank {k}: pids {[e['pid'] for e in events]}")
    expect({"name": "process_name", "ph": "M", "pid": k, "tid": 0,
            "args": {"name": f"rank {k}"}} in events, f"rank {k}: no process_name")
    ops = [e for e in events if e["ph"] == "X" and e["cat"] == "kernel"]
    got = [(e["name"], e["args"]["label"], e["args"]["step"]) for e in ops]
    want = [x for s in (1, 2) for x in (("pipeline", f"F{s}", s), ("exchange", "act", s),
                                        ("update", "w", s))]
    expect(got == want, f"rank {k}: trace ops {got}, expected {want}")
    for i in range(0, len(ops) - 2, 3):
        outer = ops[i]
        for inner in ops[i + 1:i + 3]:
            expect(outer["ts"] <= inner["ts"] and
                   inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"],
                   f"rank {k}: {inner} is not inside {outer}")
    # The steady clock since its epoch, shared with this process (not since the rank's start).
    expect(all(start * 1e6 <= e["ts"] and e["ts"] + e["dur"] <= end * 1e6 for e in ops),
           f"rank {k}: timestamps outside [{start * 1e6}, {end * 1e6}]: "
           f"{[(e['ts'], e['dur']) for e in ops]}")
expect(sorted({e["pid"] for e in merged}) == [0, 1, 2, 3], "merged trace: a row per rank")

# --- each stage in a directory of its own: every file is written by its stage's leader ----
split0, split1 = tmp / "split0", tmp / "split1"
r = run(stage0, stage1, [*ARGS, "--dump", split0], [*ARGS, "--dump", split1])
expect(r.returncode == 0, f"separate dump directories failed ({r.returncode}):\n{r.stderr}")
for d, want in ((split0, ["loss", "s0.w", "tied", "updated.s0.w", "updated.tied", "x0"]),
                (split1, ["s1.r", "s1.w", "updated.s1.r", "updated.s1.w", "x1"])):
    got = sorted(p.name[:-4] for p in d.glob("*.npy"))
    expect(got == want, f"{d.name}: files {got}, expected {want}")
    for name in got:
        if name in WANT:
            expect(np.load(d / f"{name}.npy").tobytes() == WANT[name].tobytes(), f"{d.name}/{name}")

# --- every rank's own files: the mirror's stage writes it, the other never ----------------
local = tmp / "local"
r = run(stage0, stage1, [*ARGS, "--dump", local, "--dump-all-ranks"])
expect(r.returncode == 0, f"--dump-all-ranks failed ({r.returncode}):\n{r.stderr}")
names = sorted(p.name for p in local.glob("*.npy"))
for k in range(4):
    mine = ["s0.w", "tied", "updated.s0.w", "updated.tied", "x0"] if k < 2 else \
        ["s1.w", "s1.r", "updated.s1.w", "updated.s1.r", "x1"]
    got = sorted(n[:-len(f".rank{k}.npy")] for n in names if n.endswith(f".rank{k}.npy"))
    expect(got == sorted(mine + ["loss"]), f"rank {k}: files {got}, expected {sorted(mine)}")
    path = local / f"loss.rank{k}.npy"
    if path.exists():
        expect(float(np.load(path)) == (0.0 if k < 2 else 100.0), f"loss.rank{k}.npy")
# Each rank's own shard: stage 0 splits rows over dp, stage 1 columns (the last one padding).
if (local / "s0.w.rank1.npy").exists():
    expect(np.array_equal(np.load(local / "s0.w.rank1.npy"), w0[3:]), "s0.w on rank 1")
if (local / "s1.w.rank3.npy").exists():
    expect(np.array_equal(np.load(local / "s1.w.rank3.npy"),
                          np.pad(w1[:, 4:], [(0, 0), (0, 1)])), "s1.w on rank 3")

# --- the stages' programs launched in the wrong order -------------------------------------
r = run(stage1, stage0, ARGS)
expect(r.returncode != 0 and re.search(
    r"braid runtime: rank [01]: program pipe-stage1 is pipeline stage 1 but runs on rank [01], "
    r"whose coordinate on axis 'pp' is 0 \(were the stages' programs launched in the wrong "
    r"order\?\)", r.stderr) and "step 1" not in r.stdout,
    f"wrong launch order: rc {r.returncode}\n{r.stdout}\n{r.stderr}")

for f in failures:
    print(f)
print("ok" if not failures else f"{len(failures)} failures")
sys.exit(1 if failures else 0)
