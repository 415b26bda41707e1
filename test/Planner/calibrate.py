# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t %braid_src
#
# The calibration mode: bench/planner/calibrate.py fits the compute
# calibration to a trace of runtime/tools/kernel-rates.
# - On a trace made from known rates (an H100's peak and bandwidth, bf16, the
#   same sweep as kernel-rates-cuda), the fit recovers them: every fraction
#   within 3%, the half dimension within a step of its grid (2^(1/4)).
# - On a real run of kernel-rates on these CPU ranks, the fit writes a
#   calibration and a hardware description that braid-plan and
#   --braid-print-plan accept (no figure is asserted: they are this
#   machine's).
import json
import os
import subprocess
import sys

work, src = sys.argv[1], sys.argv[2]
calibrate = os.path.join(src, "bench", "planner", "calibrate.py")
failures = []

# A trace from known rates.
peak, bandwidth = 989.4e12, 3.35e12
truth = {"gemm_efficiency": 0.7, "gemm_half_dim": 64.0, "flash_forward_efficiency": 0.4,
         "flash_backward_efficiency": 0.3, "memory_efficiency": 0.8, "scan_efficiency": 0.03}
launch = 4e-6
events = []


def kernel(name, label, flops, seconds):
    for step in (1, 2, 3):
        events.append({"name": name, "cat": "kernel", "ph": "X", "ts": 0, "dur": seconds * 1e6,
                       "pid": 0, "tid": 0,
                       "args": {"label": "dtype=bf16 " + label, "step": step, "flops": flops}})


q = lambda x: x / (x + truth["gemm_half_dim"])  # noqa: E731
for m in (128, 512, 2048, 8192):
    for n in (128, 512, 2048, 8192):
        for k in (128, 512, 2048, 8192):
            flops = 2.0 * m * n * k
            t = max(flops / (peak * truth["gemm_efficiency"] * q(m) * q(n) * q(k)),
                    2 * (m * k + k * n + m * n) / (bandwidth * truth["memory_efficiency"]))
            kernel("linear", f"m={m} n={n} k={k}", flops, t + launch)
for s in (1024, 4096):
    flops = 4.0 * s * (s + 1) / 2 * 32 * 128
    label = f"batch=1 seq={s} heads=32 head_dim=128 causal=1"
    kernel("attention", label, flops, flops / (peak * truth["flash_forward_efficiency"]) + launch)
    kernel("attention_grad", label, 2 * flops,
           2.5 * flops / (peak * truth["flash_backward_efficiency"]) + launch)
n = 1 << 26
kernel("add", f"n={n}", n, 3 * 2 * n / (bandwidth * truth["memory_efficiency"]))
kernel("silu", f"n={n}", 4 * n, 2 * 2 * n / (bandwidth * truth["memory_efficiency"]))
scan_flops = 2048 * 4096 * (8 * 16 + 5)
kernel("selective_scan", "batch=1 seq=2048 channels=4096 state=16", scan_flops,
       scan_flops / (peak * truth["scan_efficiency"]) + launch)
trace = os.path.join(work, "synthetic.json")
json.dump({"traceEvents": events}, open(trace, "w"))
out = os.path.join(work, "synthetic-cal.json")
subprocess.run([sys.executable, calibrate, trace, "--hardware", "h100-sxm", "-o", out], check=True)
got = json.load(open(out))
for key, want in truth.items():
    tolerance = 2 ** 0.25 if key == "gemm_half_dim" else 1.03
    if not (want / tolerance <= got[key] <= want * tolerance):
        failures.append(f"synthetic: {key} fitted {got[key]}, made with {want}")
print("synthetic:", {k: got[k] for k in truth})

# A real run on these CPU ranks.
trace = os.path.join(work, "cpu.json")
subprocess.run(["kernel-rates", "--steps", "2", "--trace", trace, "--quiet"], check=True,
               stdout=subprocess.DEVNULL)
cal, hw = os.path.join(work, "cpu-cal.json"), os.path.join(work, "cpu-hw.json")
subprocess.run([sys.executable, calibrate, trace, "--cpu", "cpu-ranks", "-o", cal,
                "--hardware-out", hw], check=True)
plan = subprocess.run(["braid-plan", "--model", "family=llama,hidden=64,layers=2,seq=16,"
                       "vocab=256,heads=4,kv_heads=2,ffn=128", "--gpus", "2", "--global-batch", "4",
                       "--hardware", hw, "--calibration", cal, "--evaluate", "dp=2,mbs=2,zero=0"],
                      capture_output=True, text=True)
if plan.returncode != 0 or "on 2 x cpu-ranks" not in plan.stdout:
    failures.append(f"braid-plan on the fitted CPU description: rc {plan.returncode}\n"
                    f"{plan.stdout}{plan.stderr}")
model = os.path.join(work, "gpt.mlir")
subprocess.run([sys.executable, "-m", "braid.models", "gpt-tiny", "-o", model], check=True)
printed = subprocess.run(["braid-opt", model, "--braid-training-pipeline=grid=dp=2",
                          f"--braid-print-plan=hardware={hw} calibration={cal}", "-o", os.devnull],
                         capture_output=True, text=True)
if printed.returncode != 0 or "at cpu-ranks's calibration) on cpu-ranks" not in printed.stdout:
    failures.append(f"--braid-print-plan on the fitted CPU description: rc {printed.returncode}\n"
                    f"{printed.stdout[-2000:]}{printed.stderr}")
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
