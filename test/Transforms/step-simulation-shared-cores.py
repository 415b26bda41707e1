# RUN: %python %s %braid_src
#
# The step simulation of ranks that share a machine's cores (a description's
# host_cores, StepSimulation.cpp) on real pipelines: llama-tiny under 1F1B on
# pp2 x dp2, ZB-H1, interleaved 1F1B and GPipe over four stages, scheduled,
# with the links bench/overlap uses. What must hold whatever the schedule:
#   - as many cores as ranks or more: the simulation of ranks alone, line
#     for line;
#   - fewer: every stage's step and compute no shorter than alone (an op
#     never computes faster than its rate), its compute no longer than
#     alone x ranks / cores (never slower than every rank computing at
#     once), and the cores never do more than they have: the work of every
#     rank (a stage's work alone, times its ranks) fits in cores x the
#     longest step. On one core that bound is the whole step's.
import json
import os
import re
import subprocess
import sys
import tempfile

src = sys.argv[1]
work = tempfile.mkdtemp(prefix="braid-shared-cores-")
model = os.path.join(work, "model.mlir")
subprocess.run([sys.executable, "-m", "braid.models", "llama-tiny", "--layers", "4", "--batch", "8",
                "-o", model], check=True)
with open(os.path.join(src, "test", "Transforms", "Inputs", "cpu-measured-rates.json")) as f:
    base = json.load(f)


def description(cores):
    path = os.path.join(work, f"cpu-{cores}.json")
    with open(path, "w") as f:
        json.dump({**base, **({"host_cores": cores} if cores else {})}, f)
    return path


CONFIGS = [
    ("grid=pp=2,dp=2 microbatches=4 schedule=1f1b", "pp:50us,100MB/s;dp:50us,50MB/s", 4),
    ("grid=pp=2 microbatches=4 schedule=zb-h1", "pp:50us,100MB/s", 2),
    ("grid=pp=2 microbatches=4 schedule=interleaved virtual-stages=2", "pp:50us,100MB/s", 2),
    ("grid=pp=4 microbatches=4 schedule=gpipe", "pp:50us,100MB/s", 4),
]
STAGE = re.compile(r"stage (\d+): exposed_time_per_step: [0-9.]+ us of [0-9.]+ us of transfers, "
                   r"step ([0-9.]+) us \(compute ([0-9.]+) us")
EPS = 0.2  # us: the printed figures' rounding, and then some

failures = []


def simulate(pipeline, link, cores):
    out = subprocess.run(
        ["braid-opt", model, "-o", "/dev/null",
         f"--braid-training-pipeline={pipeline} schedule-overlap=true",
         f"--braid-print-plan=hardware={description(cores)} link={link}"],
        check=True, capture_output=True, text=True).stdout
    return out, {int(k): (float(step), float(compute)) for k, step, compute in STAGE.findall(out)}


for pipeline, link, ranks in CONFIGS:
    alone_text, alone = simulate(pipeline, link, None)
    if not alone or "compute_shared" in alone_text:
        failures.append(f"{pipeline}: alone: {alone_text}")
        continue
    per = ranks // len(alone)
    text, _ = simulate(pipeline, link, ranks)
    if text != alone_text:
        failures.append(f"{pipeline}: {ranks} cores for {ranks} ranks differ from ranks alone")
    for cores in range(1, ranks):
        text, shared = simulate(pipeline, link, cores)
        what = f"{pipeline} on {cores} cores"
        if f"compute_shared: {ranks} ranks on {cores} cores" not in text:
            failures.append(f"{what}: no compute_shared line")
        if shared.keys() != alone.keys():
            failures.append(f"{what}: stages {sorted(shared)} (alone {sorted(alone)})")
            continue
        for k, (step, compute) in shared.items():
            step_alone, work_alone = alone[k]
            if step < step_alone - EPS or compute < work_alone - EPS:
                failures.append(f"{what}: stage {k} step {step} compute {compute} us, shorter "
                                f"than alone ({step_alone}, {work_alone})")
            if compute > work_alone * ranks / cores + EPS:
                failures.append(f"{what}: stage {k} computes {compute} us, more than "
                                f"{work_alone} x {ranks} / {cores}")
        longest = max(step for step, _ in shared.values())
        total = sum(w for _, w in alone.values()) * per
        if total > cores * longest + EPS * len(alone):
            failures.append(f"{what}: {total} us of work in {cores} x {longest} us")
        if not longest > max(step for step, _ in alone.values()) + EPS:
            failures.append(f"{what}: the longest step {longest} us is the alone one's")

if failures:
    sys.exit("\n".join(failures))
print("ok")
