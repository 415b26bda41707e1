"""The draws of runtime/src/serve_requests.cpp against test/lib/braid_ref/rng.py:
a prompt_len prompt is --generate's drawn prompt (uniform ids of stream
"prompt.<index>"), and poissonRequests' arrivals and prompt lengths follow the
formula serve_requests.h states. Usage: serve-draws-check.py TOOL JSONL."""
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))

from braid_ref import rng  # noqa: E402

tool, jsonl = sys.argv[1], sys.argv[2]
failures = []


def run(*args):
    return subprocess.run([tool, *args], check=True, capture_output=True, text=True).stdout


# Request 1 of the file has prompt_len 5; the run's seed 7, vocabulary 64.
drawn = [int(v) for v in run("requests", jsonl, "--vocab", "64", "--seed", "7",
                             "--prompt-of", "1").split()]
expected = [int(v) for v in rng.uniform_int(7, "prompt.1", 64, 0, 5)]
if drawn != expected:
    failures.append(f"prompt_len prompt {drawn}, rng.py draws {expected}")

# 40 requests at 50/s, prompt lengths in [3, 9], seed 11.
seed, count, rate, lo, hi = 11, 40, 50.0, 3, 9
lines = run("poisson", str(count), str(rate), str(lo), str(hi), "--vocab", "64",
            "--seed", str(seed)).splitlines()
x0 = rng.bits(seed, "arrival", 0, count)[0]
lengths = rng.uniform_int(seed, "prompt_len", hi - lo + 1, 0, count)
clock = 0.0
for i, line in enumerate(lines):
    words = line.split()
    arrival, length = float(words[3]), int(words[5])
    if abs(arrival - clock) > 1e-5 * max(1.0, clock) or length != lo + int(lengths[i]):
        failures.append(f"request {i}: arrival {arrival} length {length}, expected "
                        f"{clock:.6f} and {lo + int(lengths[i])}")
    clock += -math.log((int(x0[i]) + 1) * 2.0 ** -32) / rate * 1000.0
if len(lines) != count:
    failures.append(f"{len(lines)} requests, not {count}")
mean_gap = float(lines[-1].split()[3]) / (count - 1)

for failure in failures:
    print("FAIL:", failure)
print(f"serve draws: prompt_len prompt and {len(lines)} Poisson arrivals as rng.py draws them, "
      f"{len(failures)} differences (mean gap {mean_gap:.1f} ms at {rate:g}/s)")
sys.exit(1 if failures else 0)
