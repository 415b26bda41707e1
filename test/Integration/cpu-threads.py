# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# Threads of a CPU rank and how its f32 GEMMs accumulate, end to end:
# - Under BRAID_CPU_ACCUMULATE=f64 (the reference GEMM kernel), braid-run
#   --cpu-threads 1 and 2 (the program's --threads, hence BRAID_CPU_THREADS)
#   train llama-tiny to the same losses and parameters bit for bit:
#   attention splits (batch, head) pairs over threads, each output computed
#   by one thread in one order.
# - At the default (OpenBLAS sgemm, whose blocking depends on its thread
#   count), 1 and 2 threads agree on the loss and gradients of a first
#   step to 1e-5 of each tensor's largest value (f32 accumulation over
#   k <= 256 in another order: ~sqrt(k) 2^-24; the updated parameters are
#   not compared: AdamW's m / sqrt(v) turns such differences of small
#   gradients into differences of lr, which later steps' gradients then
#   inherit), and with the f64 run's first loss to 1e-5 relative.
# - Bad values are refused with messages: --cpu-threads -1 (braid-run),
#   --threads 0 (the program).
import os
import re
import subprocess
import sys

import numpy as np

work, src = sys.argv[1], sys.argv[2]
model = os.path.join(work, "llama-tiny.mlir")
with open(model, "w") as f:
    f.write(subprocess.run([sys.executable, "-m", "braid.models", "llama-tiny"], check=True,
                           capture_output=True, text=True).stdout)
failures = []


def run(*args, env=None):
    full = dict(os.environ)
    full.pop("BRAID_CPU_ACCUMULATE", None)
    full.pop("BRAID_CPU_THREADS", None)
    full["BRAID_RUN_CACHE"] = os.path.join(work, "cache")   # the programs, for --threads 0
    full.update(env or {})
    return subprocess.run(["braid-run", model, *args], capture_output=True, text=True, env=full)


def losses(r, what):
    if r.returncode:
        failures.append(f"{what} failed: {r.stdout}{r.stderr}")
        return []
    return [float(x) for x in re.findall(r"^step \d+ loss (\S+)$", r.stdout, re.M)]


def train(mode, steps):
    out = {}
    for threads in (1, 2):
        dump = os.path.join(work, f"{mode}-t{threads}")
        r = run("--steps", str(steps), "--quiet", "--cpu-threads", str(threads), "--dump", dump,
                env={"BRAID_CPU_ACCUMULATE": mode})
        out[threads] = (losses(r, f"{mode} --cpu-threads {threads}"), dump)
    return out


def compare(runs, mode, tolerance):
    l1, l2 = runs[1][0], runs[2][0]
    if not l1 or any(abs(a - b) > tolerance * abs(b) for a, b in zip(l1, l2)):
        failures.append(f"{mode}: losses differ between 1 and 2 threads: {l1} {l2}")
    for name in sorted(os.listdir(runs[1][1])):
        if name.startswith(("grad.", "updated.") if tolerance == 0 else "grad."):
            a = np.load(os.path.join(runs[1][1], name))
            b = np.load(os.path.join(runs[2][1], name))
            if np.max(np.abs(a - b), initial=0) > tolerance * np.max(np.abs(b), initial=0):
                failures.append(f"{mode}: {name} differs between 1 and 2 threads")


exact, fast = train("f64", 3), train("f32", 1)
compare(exact, "f64", 0.0)
compare(fast, "f32", 1e-5)
if any(abs(a - b) > 1e-5 * abs(b) for a, b in zip(fast[1][0], exact[1][0])):
    failures.append(f"f32 losses {fast[1][0]} differ from the f64 ones {exact[1][0]}")

r = run("--cpu-threads", "-1")
if r.returncode == 0 or "--cpu-threads must be at least 1" not in r.stderr:
    failures.append(f"--cpu-threads -1 must be refused: {r.returncode} {r.stderr}")
cache = os.path.join(work, "cache")
binary = sorted(os.path.join(cache, n) for n in os.listdir(cache) if n.endswith(".bin"))[0]
p = subprocess.run([binary, "--threads", "0"], capture_output=True, text=True)
if p.returncode != 2 or "--threads needs a positive integer" not in p.stderr:
    failures.append(f"--threads 0 must be refused: {p.returncode} {p.stderr}")

if failures:
    print("FAIL\n" + "\n".join(failures))
    sys.exit(1)
print("PASS")
