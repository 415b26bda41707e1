# REQUIRES: mpi
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %mpicxx %mpirun %braid_src %braid_rt_lib %t
#
# The CPU ranks' progress thread and link emulator (runtime/src/comm_mpi_progress.h,
# comm_mpi.cpp, braid/link_model.h), on a hand-written program (Inputs/overlap-program.cpp)
# on 2 ranks of dp=2, read from its trace:
# - BRAID_LINK=dp:1ms,100MB/s: a transfer takes its link for the model's time
#   (an all-reduce of 1 MiB over 2 ranks: 2 steps of 1 ms + 1 MiB at 100 MB/s)
#   and its wait returns no earlier; a wait right after the start stands still
#   for it (exposed); one started before 60 ms of compute has ended before
#   that compute did (hidden); a message arrives no earlier than the sender's
#   link has carried it. Results are checked on every rank.
# - Without the emulator, an 8 MiB all-reduce started before 150 ms of compute
#   ends during that compute with the progress thread, and not without it
#   (BRAID_PROGRESS_THREAD=0 runs too, with the same results).
# Hidden means the transfer's span on the rank's dp lane ends before the
# compute after its start does, on the rank that started it last (until then
# the transfer cannot end; a rank that started earlier may wait for its peer
# when other tests share the cores): a comparison of the two waits' lengths
# failed when a rank was descheduled for tens of ms.
# - An invalid BRAID_LINK, or one naming an axis not in the grid, aborts with
#   a message naming it.
import json
import os
import pathlib
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs"))
import mpi_launch  # noqa: E402

mpicxx, mpirun = sys.argv[1], sys.argv[2]
src, libdir, tmp = pathlib.Path(sys.argv[3]), pathlib.Path(sys.argv[4]), pathlib.Path(sys.argv[5])
inputs = pathlib.Path(__file__).parent / "Inputs"
failures = []


def expect(cond, message):
    if not cond:
        failures.append(message)


env, launcher = mpi_launch.launcher(mpirun)
program = mpi_launch.build_program(tmp / "overlap", inputs / "overlap-program.cpp", [], mpicxx,
                                   src, mpi_launch.mpi_libraries(libdir), env)


def run(name, steps=2, **extra):
    e = dict(env, **{k: str(v) for k, v in extra.items()})
    trace = tmp / name / "trace.json"
    trace.parent.mkdir()
    r = mpi_launch.run(launcher, e, [program, "--grid", "dp=2", "--steps", str(steps), "--trace",
                                     trace], 2, 120, failures)
    return r, [json.load(open(trace.parent / f"trace.rank{k}.json"))["traceEvents"]
               if (trace.parent / f"trace.rank{k}.json").exists() else [] for k in range(2)]


def spans(events, cat, step=2):
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == cat
            and e["args"]["step"] == step]


def hidden_transfer(traces, step=2):
    """(rank, start, end) of the first all-reduce of `step` on the dp lane of
    the rank that started it last, and the end of that rank's compute after
    it (microseconds); None where a trace lacks them."""
    last = None
    for k, ev in enumerate(traces):
        comm = [e for e in spans(ev, "comm", step) if e["name"] == "all_reduce"]
        spin = [e for e in spans(ev, "kernel", step) if e["name"] == "compute"]
        if not comm or not spin:
            return None
        row = (k, comm[0]["ts"], comm[0]["ts"] + comm[0]["dur"], spin[0]["ts"] + spin[0]["dur"])
        if last is None or row[1] > last[1]:
            last = row
    return last


def inside(events, op, cat, step=2):
    """The events of `cat` within kernel `op` of `step` (microseconds)."""
    outer = [e for e in spans(events, "kernel", step) if e["name"] == op]
    if len(outer) != 1:
        return []
    o = outer[0]
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == cat and
            o["ts"] <= e["ts"] and e["ts"] + e["dur"] <= o["ts"] + o["dur"] + 1]


# --- the emulated link ---------------------------------------------------------
# All-reduce of 1 MiB on 2 ranks: 2 steps x 1 ms + 2 (n-1)/n x 1 MiB / 100 MB/s.
MIB = 1 << 20
allreduce_us = (2 * 1e-3 + MIB / 100e6) * 1e6
message_us = (1e-3 + MIB / 100e6) * 1e6
r, traces = run("link", BRAID_LINK="dp:1ms,100MB/s")
expect(r.returncode == 0 and "step 2 loss 0" in r.stdout,
       f"emulated run failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
for k, ev in enumerate(traces):
    lanes = {e["args"]["name"]: e["tid"] for e in ev
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    expect(lanes == {"compute": 0, "comm dp": 1}, f"rank {k}: lanes {lanes}")
    exposed_wait = inside(ev, "exposed", "wait")
    exposed_comm = [e for e in spans(ev, "comm") if e["name"] == "all_reduce"]
    # The wait ends no earlier than the transfer's start plus its link's time.
    expect(len(exposed_wait) == 1 and len(exposed_comm) == 3 and
           exposed_wait[0]["ts"] + exposed_wait[0]["dur"] >=
           exposed_comm[1]["ts"] + 0.999 * allreduce_us,
           f"rank {k}: the exposed all-reduce's wait {exposed_wait} ends before its link's "
           f"{allreduce_us:.0f} us from {exposed_comm[1:2]}")
    expect(len(exposed_comm) == 3 and all(e["dur"] >= 0.999 * allreduce_us for e in exposed_comm[:2]),
           f"rank {k}: all-reduces on the dp lane {exposed_comm} (want 3, the first two of at "
           f"least {allreduce_us:.0f} us)")
last = hidden_transfer(traces)
expect(last is not None and last[2] >= last[1] + 0.999 * allreduce_us and last[2] < last[3],
       f"the all-reduce started before 60 ms of compute (rank, start, end, compute's end): "
       f"{last}: not hidden, or shorter than its link's {allreduce_us:.0f} us")
# The message: sent by rank 0, its receive on rank 1 ends no earlier than the
# sender's link has carried it (both ranks' traces are on one steady clock).
sent = [e for e in spans(traces[0], "comm") if e["name"] == "send"]
received = [e for e in spans(traces[1], "comm") if e["name"] == "recv"]
expect(len(sent) == 1 and len(received) == 1 and sent[0]["dur"] >= 0.999 * message_us and
       received[0]["ts"] + received[0]["dur"] >= sent[0]["ts"] + 0.999 * message_us,
       f"message: sent {sent}, received {received} (link {message_us:.0f} us)")

# --- the progress thread -------------------------------------------------------
# Without the emulator, an 8 MiB all-reduce started before 150 ms of compute
# that makes no MPI call is complete by its wait with the progress thread, and
# not when waited for at once. Without the thread (BRAID_PROGRESS_THREAD=0)
# the results are the same; whether the data moved before the wait depends on
# which rank reached a kernel boundary first (printed, not asserted).
big = dict(OVERLAP_ELEMENTS=2 * MIB, OVERLAP_COMPUTE_MS=150)
for name, extra in (("thread", {}), ("no-thread", {"BRAID_PROGRESS_THREAD": "0"})):
    r, traces = run(name, **big, **extra)
    expect(r.returncode == 0 and "step 2 loss 0" in r.stdout,
           f"{name} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
    for k, ev in enumerate(traces):
        hidden, exposed = inside(ev, "hidden", "wait"), inside(ev, "exposed", "wait")
        print(f"{name}, rank {k}: hidden wait {hidden[0]['dur'] if hidden else None} us, "
              f"exposed wait {exposed[0]['dur'] if exposed else None} us")
        expect(len(hidden) == 1 and len(exposed) == 1,
               f"{name}, rank {k}: waits {hidden} after 150 ms of compute, {exposed} at once")
    last = hidden_transfer(traces)
    print(f"{name}: the 8 MiB all-reduce before 150 ms of compute (rank, start, end, "
          f"compute's end): {last}")
    expect(last is not None and (last[2] < last[3]) == (name == "thread"),
           f"{name}: the 8 MiB all-reduce {'did not end' if name == 'thread' else 'ended'} "
           f"during the 150 ms of compute after it: {last}")

# --- invalid descriptions --------------------------------------------------------
for spec, message in (("dp:1ms", "'dp:1ms' is not axis:latency,bandwidth"),
                      ("dp:1parsec,1GB/s", "latency '1parsec' of axis 'dp'"),
                      # strtod reads it: the emulator would sleep forever.
                      ("dp:inf,1GB/s", "latency 'inf' of axis 'dp'"),
                      ("dp:1us,fast", "bandwidth 'fast' of axis 'dp'"),
                      ("tp:1us,1GB/s", "axis 'tp' is not an axis of the grid dp=2")):
    e = dict(env, BRAID_LINK=spec)
    r = mpi_launch.run(launcher, e, [program, "--grid", "dp=2", "--steps", "1"], 2, 60, None)
    expect(r.returncode != 0 and f"BRAID_LINK='{spec}': " in r.stderr and message in r.stderr,
           f"BRAID_LINK={spec}: rc {r.returncode}, stderr:\n{r.stderr}")

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("link emulator and progress thread: ok")
