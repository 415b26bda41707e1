# REQUIRES: mpirun, cudasim
# UNSUPPORTED: sanitize
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %braid_src %t
#
# GPU ranks' communication lanes in the trace: with --trace, the NCCL
# provider (comm_nccl.cu, here over cudasim's NCCL) brackets each transfer
# with timed events on its stream, and the trace puts it on its group's lane
# ("comm dp", "comm tp") as the MPI provider's transfers are on CPU ranks.
# On every rank of llama-tiny on dp2 x tp2: one transfer per traced wait on
# the compute lane, of the same kind and group, within the step, never ending
# after the wait for it (the compute stream cannot resume before the
# transfer is done), and each group on the lane of its name.
import json
import os
import subprocess
import sys

src, work = sys.argv[1], sys.argv[2]
trace = os.path.join(work, "trace.json")
r = subprocess.run(["braid-run", os.path.join(src, "examples", "llama-tiny.mlir"), "--backend",
                    "cudasim", "--grid", "dp=2,tp=2", "--steps", "1", "--trace", trace, "--quiet"],
                   capture_output=True, text=True, timeout=900)
if r.returncode != 0:
    sys.exit(f"braid-run failed ({r.returncode}):\n{r.stdout}{r.stderr}")

failures = []
for rank in range(4):
    events = json.load(open(os.path.join(work, f"trace.rank{rank}.json")))["traceEvents"]
    lanes = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    done = [e for e in events if e.get("ph") == "X"]
    waits = sorted((e for e in done if e["cat"] == "wait"), key=lambda e: e["ts"])
    comm = [e for e in done if e["cat"] == "comm"]  # in the order of their waits
    kernels = [e for e in done if e["cat"] == "kernel" and e["args"]["step"] == 1]
    start = min(e["ts"] for e in kernels)
    end = max(e["ts"] + e["dur"] for e in kernels)
    groups = sorted({e["args"]["group"] for e in comm})
    print(f"rank {rank}: {len(comm)} transfers on lanes {sorted(lanes.values())}, "
          f"{sum(e['dur'] for e in comm):.0f} us in all")
    if len(comm) != len(waits) or not comm:
        failures.append(f"rank {rank}: {len(comm)} transfers for {len(waits)} waits")
        continue
    if groups != ["dp", "dp,tp", "tp"]:
        failures.append(f"rank {rank}: groups {groups}")
    for w, t in zip(waits, comm):
        what = f"{t['name']} over {t['args']['group']}"
        if w["args"]["label"] != what:
            failures.append(f"rank {rank}: the wait for '{w['args']['label']}' met '{what}'")
            break
        if lanes.get(t["tid"]) != "comm " + t["args"]["group"]:
            failures.append(f"rank {rank}: {what} on lane {lanes.get(t['tid'])}")
            break
        if not (start - 1 <= t["ts"] and t["ts"] + t["dur"] <= end + 1):
            failures.append(f"rank {rank}: {what} at {t['ts']} outside the step [{start}, {end}]")
            break
        # Whole nanoseconds in the file: equal times may round apart by 1 ns.
        if t["ts"] + t["dur"] > w["ts"] + w["dur"] + 0.002:
            failures.append(f"rank {rank}: {what} ends at {t['ts'] + t['dur']}, after the wait "
                            f"for it ({w['ts'] + w['dur']})")
            break

if failures:
    sys.exit("\n".join(failures))
print("PASS")
