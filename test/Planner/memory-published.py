# RUN: %python %s %braid_src
#
# The planner's memory against published peaks (bench/planner/memory.py over
# the torchtitan rows of bench/planner/published.json whose runtime braid-plan
# models, `--runtime torchtitan`): every modelled row within 5% of the
# published reserved peak, nothing fitted. The model is deterministic, so a
# change of a memory formula or of the runtime that moves a row out of its
# bound fails here; so does a row dropped from the comparison.
import os
import re
import shutil
import subprocess
import sys

src = sys.argv[1]
out = subprocess.run([sys.executable, os.path.join(src, "bench", "planner", "memory.py"),
                      "--bin", os.path.dirname(shutil.which("braid-plan"))],
                     capture_output=True, text=True, check=True).stdout
print(out)
m = re.search(r"^modelled: (\d+) rows, median \|error\| ([\d.]+)%, max ([\d.]+)%, "
              r"within 5%: (\d+)/(\d+)$", out, re.M)
if not m:
    sys.exit("FAIL: no summary line")
rows, worst, within = int(m[1]), float(m[3]), int(m[4])
failures = []
if rows < 6:
    failures.append(f"{rows} modelled rows, expected at least 6")
if within != rows or worst > 5.0:
    failures.append(f"{rows - within} rows beyond 5% (max {worst}%)")
if failures:
    sys.exit("FAIL\n" + "\n".join(failures))
print("PASS")
