# REQUIRES: mpirun
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# A rank lost while serving (issue 43): braid-run --serve on tp=2 with
# requests arriving every 100 ms; once three have completed, the test kills
# one rank's process (SIGKILL). The run must end within seconds, not hang,
# with a non-zero status and a message naming the lost rank (Open MPI's
# launcher names it, the other rank says where it stopped), and --output must
# keep every request that completed before, one valid JSON line each.
import json
import os
import signal
import subprocess
import sys
import time

work, src = sys.argv[1], sys.argv[2]
requests = os.path.join(work, "requests.jsonl")
with open(requests, "w") as f:
    for i in range(40):
        f.write(json.dumps({"prompt": [1, 2, 3, 1 + i % 50], "max_new_tokens": 3,
                            "arrival_ms": 100 * i}) + "\n")
output = os.path.join(work, "out.jsonl")
env = dict(os.environ, BRAID_RUN_CACHE=os.path.join(work, "cache"))
run = subprocess.Popen(["braid-run", os.path.join(src, "examples", "llama-tiny.mlir"), "--quiet",
                        "--serve", requests, "--batch", "2", "--grid", "tp=2", "--output", output],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def completed():
    try:
        with open(output) as f:
            return sum(1 for line in f if line.endswith("\n"))
    except FileNotFoundError:
        return 0


deadline = time.monotonic() + 120
while completed() < 3 and run.poll() is None and time.monotonic() < deadline:
    time.sleep(0.1)
# The serving ranks: the binary braid-run built, started with --serve.
ranks = []
for pid in os.listdir("/proc"):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read().split(b"\0")
    except (OSError, ValueError):
        continue
    if pid.isdigit() and args and args[0].endswith(b".bin") and b"--serve" in args and \
            requests.encode() in args:
        ranks.append(int(pid))
failures = []
if run.poll() is not None or len(ranks) != 2:
    failures.append(f"expected 2 serving ranks running after 3 completions, found {ranks} "
                    f"(braid-run status {run.poll()})")
else:
    os.kill(max(ranks), signal.SIGKILL)
    killed = time.monotonic()
    try:
        out, err = run.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        run.kill()
        out, err = run.communicate()
        failures.append("the run did not end within 60 s of the lost rank")
    took = time.monotonic() - killed
    if run.returncode == 0 or "exited on signal 9" not in err:
        failures.append(f"status {run.returncode}, no message naming the lost rank:\n{err}")
    with open(output) as f:
        lines = [json.loads(line) for line in f if line.endswith("\n")]
    if len(lines) < 3 or not all(len(line["ids"]) == 3 for line in lines):
        failures.append(f"--output lost completed requests: {lines}")
    print(f"rank lost: the run ended {took:.1f} s later, {len(lines)} requests kept")
if failures:
    print("\n".join(failures))
    sys.exit(1)
print("serve-rank-lost: ok")
