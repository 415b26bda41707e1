# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# braid-run end to end on the CPU runtime: loss per step, planned peak equal
# to the measured peak, a Perfetto/Chrome trace that is valid JSON with one
# complete event per kernel of the program, the generated source on request,
# the CUDA variant of the same source compiled with nvcc for sm_90 when nvcc
# is installed, and located errors for bad input.
import json
import os
import re
import shutil
import subprocess
import sys

work, src = sys.argv[1], sys.argv[2]
model = os.path.join(src, "examples", "moe-tiny.mlir")
failures = []


def run(*args):
    return subprocess.run(["braid-run", *args], capture_output=True, text=True)


trace = os.path.join(work, "trace.json")
source = os.path.join(work, "moe.cpp")
r = run(model, "--steps", "3", "--seed", "1", "--trace", trace, "--emit-cpp", source, "--quiet",
        "--optimizer", "none")
print(r.stdout, end="")
steps = re.findall(r"^step (\d+) loss (\S+)$", r.stdout, re.M)
if r.returncode != 0 or [s for s, _ in steps] != ["1", "2", "3"]:
    failures.append(f"expected three steps, got rc {r.returncode}:\n{r.stdout}{r.stderr}")
elif len({loss for _, loss in steps}) != 1:
    failures.append("a forward-only step must give the same loss every step")
r = run(model, "--steps", "3", "--seed", "1", "--quiet")
trained = [float(x) for x in re.findall(r"^step \d+ loss (\S+)$", r.stdout, re.M)]
if r.returncode != 0 or len(trained) != 3 or not trained[2] < trained[0]:
    failures.append(f"training steps must lower the loss: {r.stdout}{r.stderr}")
peaks = dict(re.findall(r"^(planned_peak_bytes|measured_peak_bytes): (\d+)$", r.stdout, re.M))
if len(peaks) != 2 or peaks["planned_peak_bytes"] != peaks["measured_peak_bytes"]:
    failures.append(f"peaks differ or missing: {peaks}")

# The trace: valid JSON, complete events, every kernel the source launches.
with open(trace) as f:
    events = json.load(f)["traceEvents"]
with open(source) as f:
    text = f.read()
# Kernels per step: those of @step plus those of each function it calls.
per_call = {}
for fn in re.finditer(r"void fn_(\w+)\(.*?\n}\n", text, re.S):
    per_call[fn.group(1)] = len(re.findall(r"braid_rt_op_begin\(", fn.group(0)))
calls = re.findall(r"fn_(\w+)\(rt, arena, frame", text)
expected = per_call["step"] + sum(per_call[c] for c in calls)
kernel_events = [e for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"]
if len(kernel_events) != 3 * expected:
    failures.append(f"trace has {len(kernel_events)} kernel events, expected 3 x {expected}")
names = {e["name"] for e in kernel_events}
for op in ["embedding", "rms_norm", "linear", "attention", "router", "dispatch",
           "batch_matmul", "combine", "cross_entropy", "glu", "add"]:
    if op not in names:
        failures.append(f"no '{op}' event in the trace (have {sorted(names)})")
if not all(e["dur"] >= 0 and "label" in e["args"] for e in kernel_events):
    failures.append("trace events need a duration and a label")
print(f"trace: {len(kernel_events)} kernel events, {len(names)} kinds")

# bf16 storage runs too.
r = run(model, "--dtype", "bf16", "--quiet")
if r.returncode != 0 or "step 1 loss" not in r.stdout:
    failures.append(f"bf16 run failed:\n{r.stdout}{r.stderr}")

# The CUDA variant of the same generated source builds with nvcc (no GPU here).
if shutil.which("nvcc") or os.path.exists("/usr/local/cuda/bin/nvcc"):
    r = run(model, "--backend", "cuda", "--compile-only")
    print("cuda build:", "ok" if r.returncode == 0 else "FAILED")
    if r.returncode != 0:
        failures.append(f"nvcc build of the emitted program failed:\n{r.stderr}")
else:
    print("cuda build: nvcc not installed")

# Bad input: located diagnostics and exit 1, never a crash.
bad = os.path.join(work, "bad.mlir")
with open(bad, "w") as f:
    f.write("module {\n  func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "    return %x : tensor<4xf32>\n  }\n}\n")
r = run(bad, "--optimizer", "none")
if r.returncode != 1 or not re.search(r"bad\.mlir:2:3: error: the step function must return "
                                      r"one tensor<f32>", r.stderr):
    failures.append(f"bad model: rc {r.returncode}, stderr:\n{r.stderr}")
r = run(bad)
if r.returncode != 1 or not re.search(r"bad\.mlir:2:3: error: autodiff needs a step function "
                                      r"returning the scalar loss", r.stderr):
    failures.append(f"bad model to train: rc {r.returncode}, stderr:\n{r.stderr}")
r = run(model, "--dtype", "f8")
if r.returncode != 1 or "'to' must be bf16 or f16, found 'f8'" not in r.stderr:
    failures.append(f"bad dtype: rc {r.returncode}, stderr:\n{r.stderr}")

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
