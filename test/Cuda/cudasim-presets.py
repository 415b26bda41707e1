# REQUIRES: cudasim
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %braid_src %t
#
# The CUDA path of every tiny preset (gpt, llama, mamba, moe, hybrid) runs on
# the CPU emulation: braid-run --backend cudasim builds the emitted program
# against the CUDA backend and kernels on runtime/cudasim (fused elementwise
# kernels launched on the compute stream, cuBLASLt, cub, streams and events
# emulated) and its two steps equal the CPU backend's, judged by
# bench/gpu/compare.py as the GPU check judges a real GPU (losses, every dumped
# value and gradient within 1e-3; updated parameters and optimizer states are
# AdamW's drift, reported, and judged by the optimizer's replay in the
# --verify tests: cudasim-ranks.py, cudasim-pipeline-context.py). The judge
# fails a run whose one gradient is off by 1%.
import os
import shutil
import subprocess
import sys

import numpy as np

src, tmp = sys.argv[1], sys.argv[2]
compare = os.path.join(src, "bench", "gpu", "compare.py")
failed = []


def run(model, backend, out):
    log = os.path.join(tmp, f"{os.path.basename(out)}.log")
    r = subprocess.run(["braid-run", model, "--backend", backend, "--steps", "2", "--dump", out],
                       capture_output=True, text=True)
    with open(log, "w") as f:
        f.write(r.stdout + r.stderr)
    if r.returncode != 0:
        failed.append(f"{model} on {backend}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return log


# The sanitized build (ASAN_OPTIONS set by lit) runs llama-tiny only: fibers
# under AddressSanitizer take minutes per preset.
presets = ["llama"] if "ASAN_OPTIONS" in os.environ else ["gpt", "llama", "mamba", "moe",
                                                          "hybrid"]
for preset in presets:
    model = os.path.join(src, "examples", f"{preset}-tiny.mlir")
    cpu, sim = os.path.join(tmp, f"{preset}-cpu"), os.path.join(tmp, f"{preset}-cudasim")
    cpu_log, sim_log = run(model, "cpu", cpu), run(model, "cudasim", sim)
    if "on cuda" not in open(sim_log).read():
        failed.append(f"{preset}: the cudasim program did not run the cuda backend")
    r = subprocess.run([sys.executable, compare, cpu, sim, "--cpu-log", cpu_log, "--cuda-log",
                        sim_log, "--model", f"{preset}-tiny"], capture_output=True, text=True)
    print(r.stdout, end="")
    if r.returncode != 0:
        failed.append(f"{preset}: {r.stdout}{r.stderr}")

# The judge fails a gradient 1% off.
broken = os.path.join(tmp, "llama-broken")
shutil.copytree(os.path.join(tmp, "llama-cudasim"), broken)
grad = os.path.join(broken, "grad.layers.0.mlp.w_up.npy")
np.save(grad, np.load(grad) * np.float32(1.01))
r = subprocess.run([sys.executable, compare, os.path.join(tmp, "llama-cpu"), broken, "--model",
                    "llama-broken"], capture_output=True, text=True)
print(r.stdout.splitlines()[0] if r.stdout else r.stderr)
if r.returncode == 0 or "grad.layers.0.mlp.w_up.npy" not in r.stdout:
    failed.append(f"compare.py passed a gradient 1% off:\n{r.stdout}{r.stderr}")

if failed:
    print("FAILED:\n" + "\n".join(failed))
    sys.exit(1)
print("cudasim presets: PASS")
