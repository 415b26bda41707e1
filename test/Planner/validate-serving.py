# RUN: %python %s %braid_src
#
# The serving cost model against published serving measurements
# (bench/planner/serving.py over bench/planner/published-serving.json; nothing
# fitted to them). What holds now:
# - the published choices between layouts: NVIDIA's Llama 3.1 405B on an HGX
#   H200 in FP8, tensor parallelism 5.6x faster than pipeline parallelism at
#   minimum latency and pipeline parallelism 1.5x the throughput at maximum:
#   the model's ratios within 15% of both;
# - a regression guard on the 73 validation rows (the two rows marked
#   "calibration" fit decode's HBM efficiency and are left out; deterministic:
#   a change of a formula or a calibration that moves them fails here): the
#   issue's median target, |error| at most 10%, every row within 150%, at
#   least 55 within 25%, and the dense rows of TensorRT-LLM's in-flight
#   batching (Llama 3.1 8B, 3.3 70B, 3.1 405B on H100 and H200) at a median
#   of 10% at most. The other target (every row within 25%) is not
#   met yet: TensorRT-LLM 0.6's tensor-parallel FP8 rows of the GQA models on
#   H100 run 1.2-2.4x slower than the model, and the MoE rows of Qwen3-235B
#   1.4-2.0x slower (docs/planner.md).
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
m = re.search(r"^validation: (\d+) rows, median \|error\| ([\d.]+)%, max ([\d.]+)%, "
              r"within 25%: (\d+)/(\d+)$", out, re.M)
if not m:
    sys.exit("FAIL: no summary line")
rows, median, worst, within = int(m[1]), float(m[2]), float(m[3]), int(m[4])
if rows < 73:
    failures.append(f"{rows} validation rows, expected at least 73")
if within < 55:
    failures.append(f"{within} validation rows within 25%, expected at least 55")
dense = re.search(r"^group trtperf dense output_tokens_per_s: (\d+) rows, median \|error\| "
                  r"([\d.]+)%", out, re.M)
if not dense or float(dense[2]) > 10.0:
    failures.append("the dense in-flight rows' median |error| is past 10%" if dense else
                    "no group line of the dense in-flight rows")
if median > 10.0:
    failures.append(f"median |error| {median}% > 10%")
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
