# RUN: %python %s %braid_src
#
# The serving cost model against published serving measurements
# (bench/planner/serving.py over bench/planner/published-serving.json; nothing
# fitted to them). What holds now:
# - the published choices between layouts: NVIDIA's Llama 3.1 405B on an HGX
#   H200 in FP8, tensor parallelism 5.6x faster than pipeline parallelism at
#   minimum latency and pipeline parallelism 1.5x the throughput at maximum:
#   the model's ratios within 15% of both;
# - a regression guard on the rows (deterministic: a change of a formula or a
#   calibration that moves them fails here): median |error| at most 25%,
#   every row within 150%. The targets (median 10%, every row within
#   25%) are not met yet: TensorRT-LLM 0.6's tensor-parallel FP8 rows on H100
#   run 1.2-2.4x slower than the model, its first tokens at 128-token prompts
#   take 3-4 ms more (the runtime's per-request cost, which the model leaves
#   out), and the MoE rows of Qwen3-235B 1.7-1.9x slower (docs/planner.md).
import os
import re
import shutil
import subprocess
import sys

src = sys.argv[1]
out = subprocess.run([sys.executable, os.path.join(src, "bench", "planner", "serving.py"),
                      "--bin", os.path.dirname(shutil.which("braid-plan"))],
                     capture_output=True, text=True, check=True).stdout
print(out)
failures = []
m = re.search(r"^all: (\d+) rows, median \|error\| ([\d.]+)%, max ([\d.]+)%, "
              r"within 25%: (\d+)/(\d+)$", out, re.M)
if not m:
    sys.exit("FAIL: no summary line")
rows, median, worst = int(m[1]), float(m[2]), float(m[3])
if rows < 46:
    failures.append(f"{rows} rows, expected at least 46")
if median > 25.0:
    failures.append(f"median |error| {median}% > 25%")
if worst > 150.0:
    failures.append(f"a row beyond 150% (max {worst}%)")
ratios = re.findall(r"^ratio .*$", out, re.M)
if len(ratios) != 2:
    failures.append(f"{len(ratios)} ratio lines, expected 2")
for line in ratios:
    err = float(re.search(r"\(([-+][\d.]+)%\)$", line)[1])
    if abs(err) > 15.0:
        failures.append(f"{line}: beyond 15%")
if failures:
    sys.exit("FAIL\n" + "\n".join(failures))
