# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# braid-run's program cache under concurrent builds: four braid-runs of the
# same model start together on an empty cache (as tests running in parallel
# do on a fresh machine), so all four build the same program at once. Each
# must succeed: a build writes and compiles files of its own and renames the
# finished binary into place. (Sharing one source and one temporary binary
# failed here: "cannot move the program into the cache", a source truncated
# by another writer, "Text file busy" executing a binary still being linked.)
# Afterwards the cache holds one binary and its source, no leftovers, and a
# fifth run finds the binary without building ("building" not printed).
import os
import subprocess
import sys

work = sys.argv[1]
model = os.path.join(work, "llama-tiny.mlir")
with open(model, "w") as f:
    f.write(subprocess.run([sys.executable, "-m", "braid.models", "llama-tiny"], check=True,
                           capture_output=True, text=True).stdout)
cache = os.path.join(work, "cache")
env = dict(os.environ, BRAID_RUN_CACHE=cache)
command = ["braid-run", model, "--steps", "1"]
runs = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True) for _ in range(4)]
failures = []
for i, run in enumerate(runs):
    out, _ = run.communicate()
    if run.returncode:
        failures.append(f"run {i} failed ({run.returncode}):\n{out}")
    elif "step 1" not in out:
        failures.append(f"run {i} printed no step:\n{out}")
files = sorted(os.listdir(cache))
if len(files) != 2 or not files[0].endswith(".bin") or not files[1].endswith(".cpp"):
    failures.append(f"the cache holds {files}, not one binary and its source")
again = subprocess.run(command, env=env, capture_output=True, text=True)
if again.returncode or "building" in again.stderr:
    failures.append(f"a run on the warm cache built again or failed:\n{again.stderr}")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("4 concurrent builds of one program: all ran; the cache holds", files)
