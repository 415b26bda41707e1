# RUN: %python %s %braid_src
#
# The planner's targets against published step times (bench/planner/
# validate.py over bench/planner/published.json, the calibration in the
# tree): the median |error| of the step time at most 5%, every row within
# 15%. The cost model is deterministic, so this is not a timing: a change of
# a formula, a runtime or a calibration that moves a row out of its bound
# fails here. Also the pair measured on one framework, machine and layout
# (NeMo AutoModel's hybrid Nemotron 3 Nano against Qwen3-30B-A3B): the
# predicted ratio of their steps within 15% of the published one.
import os
import re
import shutil
import subprocess
import sys

src = sys.argv[1]
out = subprocess.run([sys.executable, os.path.join(src, "bench", "planner", "validate.py"),
                      "--bin", os.path.dirname(shutil.which("braid-plan"))],
                     capture_output=True, text=True, check=True).stdout
print(out)
failures = []
m = re.search(r"^all: (\d+) rows, median \|error\| ([\d.]+)%, max ([\d.]+)%, "
              r"within 15%: (\d+)/(\d+)$", out, re.M)
if not m:
    sys.exit("FAIL: no summary line")
rows, median, worst, within, total = (int(m[1]), float(m[2]), float(m[3]), int(m[4]),
                                      int(m[5]))
if rows < 49:
    failures.append(f"{rows} rows, expected at least 49")
if median > 5.0:
    failures.append(f"median |error| {median}% > 5%")
if within != total or worst > 15.0:
    failures.append(f"{total - within} rows beyond 15% (max {worst}%)")
for line in re.findall(r"^ratio .*$", out, re.M):
    err = float(re.search(r"\(([-+][\d.]+)%\)$", line)[1])
    if abs(err) > 15.0:
        failures.append(f"{line}: beyond 15%")
if failures:
    sys.exit("FAIL\n" + "\n".join(failures))
print("PASS")
