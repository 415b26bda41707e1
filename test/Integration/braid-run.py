# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# braid-run end to end on the CPU runtime: loss per step, planned peak equal
# to the measured peak, a Perfetto/Chrome trace that is valid JSON with one
# complete event per kernel of the program, the generated source on request
# (its CUDA build: test/Cuda/braid-run-cuda.py), located errors for bad input, --grid/--verify on a 1-rank grid
# (and on 2 ranks under mpirun when MPI is installed), and the new options' errors.
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
# The source is printed unrolled: the kernels of the trace are counted in
# its text below (test/Integration/roll-repeats.py runs rolled programs
# against unrolled ones).
r = run(model, "--steps", "3", "--seed", "1", "--trace", trace, "--emit-cpp", source, "--quiet",
        "--optimizer", "none", "--roll-repeats=false")
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
if r.returncode != 1 or "for the --dtype option: expected f32, bf16 or f16, found 'f8'" not in r.stderr:
    failures.append(f"bad dtype: rc {r.returncode}, stderr:\n{r.stderr}")

# --grid and --verify. A 1-rank grid checks the whole --verify path without MPI:
# both programs run, dump, and compare equal; step 1's update is measured
# against AdamW replayed in double on the run's gradients (with the clipping
# coefficient recomputed from them), which leaves at most a rounding of f32.
verify_dump = os.path.join(work, "verify")
r = run(model, "--steps", "2", "--seed", "1", "--quiet", "--grid", "dp=1", "--verify",
        "--dump", verify_dump)
verdict = "\n".join(r.stdout.splitlines()[-6:])
if (r.returncode != 0 or len(re.findall(r"^step \d+ loss ", r.stdout, re.M)) != 2
        or not re.fullmatch(r"verify: loss 0\nverify: gradients 0 \(step1\.grad\.\S+\)\n"
                            r"verify: parameters (\S+) \(step1\.updated\.\S+ on rank 0\)\n"
                            r"verify: copies on other ranks 0 \(0 compared\)\n"
                            r"verify: drift after 2 steps \(not judged\) 0 \(updated\.\S+\)\n"
                            r"verify: PASS", verdict)
        or not float(re.search(r"parameters (\S+)", verdict).group(1)) <= 2 ** -23):
    failures.append(f"--grid dp=1 --verify: rc {r.returncode}\n{r.stdout}{r.stderr}")
for sub in ("", "reference"):
    names = os.listdir(os.path.join(verify_dump, sub)) if os.path.isdir(
        os.path.join(verify_dump, sub)) else []
    if not any(n.startswith("updated.") for n in names) or "loss.npy" not in names:
        failures.append(f"--verify --dump: no updated.*.npy / loss.npy in {sub or 'DIR'}: "
                        f"{sorted(names)[:5]}")
# Several ranks: braid-run links the MPI runtime and starts mpirun itself; only
# rank 0 prints.
if shutil.which("mpirun") or shutil.which("mpiexec"):
    r = run(model, "--steps", "1", "--optimizer", "none", "--grid", "dp=2")
    if (r.returncode != 0 or len(re.findall(r"^step 1 loss ", r.stdout, re.M)) != 1
            or "grid dp=2 (2 ranks, mpi)" not in r.stderr):
        failures.append(f"--grid dp=2 under mpirun: rc {r.returncode}\n{r.stdout}{r.stderr}")
    print("mpi run:", "ok" if r.returncode == 0 else "FAILED")
else:
    print("mpi run: mpirun not installed")
# Option errors, before any work.
for args, message in (
        (["--verify"], "--verify compares a partitioned or micro-batched run with the 1-rank run: it needs --grid or --microbatches"),
        (["--grid", "dp=2,tp"], "bad --grid 'dp=2,tp': 'tp' is not AXIS=SIZE"),
        (["--grid", "dp=0"], "bad --grid 'dp=0': axis dp needs a positive size, got '0'"),
        (["--grid", "tp=2,tp=2"], "bad --grid 'tp=2,tp=2': axis tp appears twice"),
        (["--grid="], "--grid needs AXIS=SIZE"),
        (["--zero", "4"], "--zero must be 0, 1, 2 or 3 (the ZeRO stage), found 4"),
        (["--plan", "fsdp"], "for the --plan option: expected megatron or data, found 'fsdp'"),
        (["--microbatches", "0"], "--microbatches must be at least 1, found 0"),
        (["--schedule", "zigzag"],
         "for the --schedule option: expected gpipe, 1f1b, interleaved or zb-h1, found 'zigzag'"),
        (["--virtual-stages", "0"], "--virtual-stages must be at least 1, found 0"),
        # --pp-layout is the pipeline's list option: its parser reads the
        # numbers, the driver checks them.
        (["--pp-layout", "2,x"], "for the --pp-layout option: 'x' value invalid"),
        (["--pp-layout", "2,0"],
         "--pp-layout must list positive layer counts (e.g. 2,3), found '2,0'"),
        (["--grid", "dp=1", "--verify", "--verify-tolerance", "-1"],
         "--verify-tolerance must be a non-negative number")):
    r = run(model, *args)
    if r.returncode != 1 or f"braid-run: {message}" not in r.stderr or r.stdout:
        failures.append(f"{args}: rc {r.returncode}, stdout {r.stdout!r}, stderr:\n{r.stderr}")

# The overlap scheduler's timing model: a hardware it does not know, and
# links that do not parse, are refused before any work, named as the user gave
# them (not as the pass that takes them); BRAID_LINK reaches the scheduler
# (the program is scheduled for the links it runs on).
for args, env, message in (
        (["--schedule-hardware", "tpu-v9"], {},
         "braid-run: --schedule-hardware tpu-v9: no hardware description 'tpu-v9'"),
        ([], {"BRAID_LINK": "dp:fast"},
         "braid-run: BRAID_LINK='dp:fast': 'dp:fast' is not axis:latency,bandwidth")):
    r = subprocess.run(["braid-run", model, "--grid", "dp=2", "--compile-only", *args],
                       capture_output=True, text=True, env=dict(os.environ, **env))
    if r.returncode != 1 or message not in r.stderr:
        failures.append(f"{args} {env}: rc {r.returncode}, stderr:\n{r.stderr}")

# --help lists braid-run's own options (about 105 lines with --serve's), not
# the LLVM options linking MLIR registers (hundreds of lines more); the
# testing hook stays hidden.
r = run("--help")
help_lines = r.stdout.splitlines()
if (r.returncode != 0 or len(help_lines) > 150
        or not all(f"--{o}" in r.stdout for o in ("grid", "verify", "dtype", "zero", "steps"))
        or "--aarch64" in r.stdout or "--inject-fault" in r.stdout):
    failures.append(f"--help: rc {r.returncode}, {len(help_lines)} lines:\n{r.stdout[:2000]}")

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
