# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %braid_src %t
#
# braid-run --generate with Mamba layers on the CUDA path (issue 42):
# mamba-tiny's prefill, decode and forward programs built against the CUDA
# backend and kernels on the CPU emulation (--backend cudasim; the Mamba
# state kernels of runtime/src/cuda/mamba_step.cu), one greedy run with
# --verify (teacher forcing within 1e-5 relative) on prompts of different
# lengths, and the ids equal the CPU backend's for the same prompts. Three
# tokens keep it short (the emulation runs about 0.1 s per decode step here).
# The kernels' state-dropping test hook under cudasim: cudasim-mamba-step.py.
import os
import re
import subprocess
import sys

src, tmp = sys.argv[1], sys.argv[2]
model = os.path.join(src, "examples", "mamba-tiny.mlir")
prompts = os.path.join(tmp, "prompts.txt")
with open(prompts, "w") as f:
    f.write("1 2 3 4 5 6\n17 3\n")
env = dict(os.environ, BRAID_RUN_CACHE=os.path.join(tmp, "cache"))
env.pop("BRAID_TEST_PERTURB_LOGITS", None)
env.pop("BRAID_TEST_FORGET_MAMBA_STATE", None)


def generate(backend):
    r = subprocess.run(["braid-run", model, "--quiet", "--backend", backend, "--generate", "3",
                        "--prompts", prompts, "--verify"], capture_output=True, text=True, env=env)
    return r, dict(re.findall(r"^request (\d+): (.*)$", r.stdout, re.M))


failed = []
sim, sim_ids = generate("cudasim")
m = re.search(r"^verify: ok \(worst difference (\S+) at", sim.stdout, re.M)
if sim.returncode or not m or float(m.group(1)) > 1e-5 or len(sim_ids) != 2:
    failed.append(f"cudasim: greedy --verify failed\n{sim.stdout}{sim.stderr}")
cpu, cpu_ids = generate("cpu")
if cpu.returncode or cpu_ids != sim_ids:
    failed.append(f"cudasim ids {sim_ids} differ from the CPU's {cpu_ids}\n{cpu.stdout}{cpu.stderr}")
if failed:
    print("\n".join(failed))
    sys.exit(1)
print(sim.stdout, end="")
