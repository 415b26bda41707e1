# RUN: %python %s %t
#
# The memory a pipeline schedule needs, from the static plan of each rank's
# program: GPipe keeps the activations of all m micro-batches alive on every
# rank, 1F1B at most p - r on rank r (p on the first), and the planned arena
# says the same in bytes. Also: every rank's planned peak is what its
# program measures when it runs (braid-run prints both per stage).
import os
import re
import subprocess
import sys

work = sys.argv[1]
os.makedirs(work, exist_ok=True)
model = os.path.join(work, "gpt.mlir")
with open(model, "w") as f:
    f.write(subprocess.run([sys.executable, "-m", "braid.models", "gpt-tiny", "--layers", "4",
                            "--batch", "8"], check=True, capture_output=True, text=True).stdout)

P, M = 2, 8
failures = []


def plan(schedule, rank):
    out = subprocess.run(
        ["braid-opt", model, "-o", "/dev/null",
         f"--braid-training-pipeline=grid=pp={P} microbatches={M} schedule={schedule}",
         f"--braid-print-memory-plan=pipeline-rank={rank}"],
        check=True, capture_output=True, text=True).stdout
    values = dict(re.findall(r"^(\w+): (\d+)$", out, re.M))
    return int(values["peak_live_microbatches"]), int(values["arena_bytes"]) - int(
        values["persistent_bytes"])


for rank in range(P):
    gpipe_live, gpipe_bytes = plan("gpipe", rank)
    ofob_live, ofob_bytes = plan("1f1b", rank)
    print(f"rank {rank}: gpipe {gpipe_live} micro-batches, {gpipe_bytes} bytes; "
          f"1f1b {ofob_live} micro-batches, {ofob_bytes} bytes")
    if gpipe_live != M:
        failures.append(f"rank {rank}: GPipe keeps {gpipe_live} micro-batches, expected {M}")
    if ofob_live != P - rank:
        failures.append(f"rank {rank}: 1F1B keeps {ofob_live} micro-batches, expected {P - rank}")
    if not ofob_bytes < gpipe_bytes:
        failures.append(f"rank {rank}: 1F1B plans {ofob_bytes} activation bytes, "
                        f"not fewer than GPipe's {gpipe_bytes}")

r = subprocess.run(["braid-run", model, "--grid", f"pp={P}", "--microbatches", str(M),
                    "--steps", "1"], capture_output=True, text=True)
peaks = re.findall(r"^stage (\d+): planned_peak_bytes: (\d+) measured_peak_bytes: (\d+)$",
                   r.stdout, re.M)
print("run:", peaks)
if r.returncode != 0 or sorted(int(s) for s, _, _ in peaks) != list(range(P)) or any(
        p != m for _, p, m in peaks):
    failures.append(f"braid-run: exit {r.returncode}, stage peaks {peaks}\n{r.stdout}{r.stderr}")

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
