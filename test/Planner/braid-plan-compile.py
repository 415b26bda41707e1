# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# braid-plan --compile N takes the first plans' memory from the static memory
# plan and their exposed communication from the overlap scheduler's
# simulation of the compiled program: for Llama 3 8B on 16 H100s, plans are
# compiled in rank order until three fit by their memory plans, and each
# compiled plan's figures equal what braid-opt prints for the same
# plan (--braid-print-memory-plan's arena of the busiest stage, plus the
# calibration's reserve; the sum of --braid-print-plan's exposed times of the
# stage with the most), the compiled plans are ranked again by them, and the
# closed form's step keeps its compute.
import json
import os
import re
import subprocess
import sys

work = sys.argv[1]
model = os.path.join(work, "llama3-8b.mlir")
subprocess.run([sys.executable, "-m", "braid.models", "llama3-8b", "--batch", "16", "-o", model],
               check=True)
out = subprocess.run(["braid-plan", model, "--gpus", "16", "--global-batch", "16",
                      "--hardware", "h100-sxm", "--top", "4", "--compile", "3",
                      "--format", "json"], check=True, capture_output=True, text=True).stdout
plans = json.loads(out)["plans"]
reserve = 3 * 2**30  # reserved_bytes of calibration/h100-sxm.json
failures = []
compiled = [p for p in plans if "compiled" in p]
if plans[:len(compiled)] != compiled or sum(p["compiled"]["fits"] for p in compiled) != 3:
    failures.append("expected plans compiled until 3 fit, first in the list: "
                    f"{[(p['grid'], p.get('compiled', {}).get('fits')) for p in plans]}")
steps = [(not p["compiled"]["fits"], p["compiled"]["step_s"]) for p in compiled]
if steps != sorted(steps):
    failures.append(f"compiled plans not ranked by their compiled step: {steps}")
for p in compiled:
    c = p["compiled"]
    options = (f"grid={p['grid']} zero={p['zero']} recompute={p['recompute']} "
               f"microbatches={p['microbatches']} sequence-parallel="
               f"{'true' if p['sequence_parallel'] else 'false'} dtype=bf16")
    if p["pp"] > 1:
        options += (f" schedule={'interleaved' if p['vpp'] > 1 else '1f1b'} "
                    f"virtual-stages={p['vpp']} pp-layout={','.join(map(str, p['layout']))}")
    program = os.path.join(work, "program.mlir")
    subprocess.run(["braid-opt", model, f"--braid-training-pipeline={options}", "-o", program],
                   check=True)
    text = open(program).read()
    ranks = len(re.findall(r"@(step\.pp\d+)", text.split("braid.pipeline_entries = [")[1].split("]")[0])) \
        if "braid.pipeline_entries" in text else 1
    arena = 0
    for rank in range(ranks):
        mem = subprocess.run(["braid-opt", program, f"--braid-print-memory-plan=pipeline-rank={rank}",
                              "-o", os.devnull], check=True, capture_output=True, text=True).stdout
        arena = max(arena, int(re.search(r"arena_bytes: (\d+)", mem).group(1)))
    if c["arena_bytes"] != arena or c["memory_bytes"] != arena + reserve:
        failures.append(f"{p['grid']}: compiled arena {c['arena_bytes']}, memory "
                        f"{c['memory_bytes']}; braid-opt's arena {arena}")
    plan = subprocess.run(["braid-opt", program, "--braid-print-plan", "-o", os.devnull],
                          check=True, capture_output=True, text=True).stdout
    exposed = max(float(e) for e in re.findall(r"exposed_time_per_step: ([\d.]+) us", plan)) / 1e6
    got = sum(c["exposed_s"].values())
    if abs(got - exposed) > 1e-6 + 1e-4 * exposed:
        failures.append(f"{p['grid']}: compiled exposed {got} s, --braid-print-plan {exposed} s")
    closed = sum(p["exposed_s"].values())
    if abs(c["step_s"] - (p["step_s"] - closed + got)) > 1e-9 * p["step_s"]:
        failures.append(f"{p['grid']}: compiled step {c['step_s']} is not the closed form's "
                        f"{p['step_s']} with exposed {closed} -> {got}")
    print(f"{p['grid']} zero={p['zero']} mbs={p['micro_batch']}: memory {c['memory_bytes'] / 2**30:.1f} "
          f"GiB (closed form {p['memory_bytes'] / 2**30:.1f}), exposed {got * 1e3:.1f} ms "
          f"(closed form {closed * 1e3:.1f}), step {c['step_s']:.3f} s (closed form "
          f"{p['step_s']:.3f})")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
