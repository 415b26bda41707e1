# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %braid_src %t
#
# braid-run --generate on the CUDA path (issue 42): llama-tiny's prefill,
# decode and forward programs built against the CUDA backend and kernels on
# the CPU emulation (--backend cudasim), one greedy run with --verify
# (teacher forcing within 1e-5 relative), and the ids equal the CPU
# backend's for the same prompts (greedy: the logits agree far past the
# gap between the two largest), also on two emulated ranks (tp=2) against one.
# Two tokens keep it short: the emulation runs about a second per decode step.
import os
import re
import subprocess
import sys

src, tmp = sys.argv[1], sys.argv[2]
model = os.path.join(src, "examples", "llama-tiny.mlir")
prompts = os.path.join(tmp, "prompts.txt")
with open(prompts, "w") as f:
    f.write("1 2 3 4\n17 3\n")
env = dict(os.environ, BRAID_RUN_CACHE=os.path.join(tmp, "cache"))
env.pop("BRAID_TEST_PERTURB_LOGITS", None)


def generate(backend, *flags):
    r = subprocess.run(["braid-run", model, "--quiet", "--backend", backend, "--generate", "2",
                        "--prompts", prompts, "--verify", *flags], capture_output=True, text=True,
                       env=env)
    ids = dict(re.findall(r"^request (\d+): (.*)$", r.stdout, re.M))
    return r, ids


failed = []
sim, sim_ids = generate("cudasim")
if sim.returncode or "verify: ok" not in sim.stdout or len(sim_ids) != 2:
    failed.append(f"cudasim: greedy --verify failed\n{sim.stdout}{sim.stderr}")
cpu, cpu_ids = generate("cpu")
if cpu.returncode or cpu_ids != sim_ids:
    failed.append(f"cudasim ids {sim_ids} differ from the CPU's {cpu_ids}\n{cpu.stdout}{cpu.stderr}")
# Two emulated GPU ranks (tp=2, the MPI build of the CUDA runtime): teacher
# forcing and the comparison with one rank (identical ids, logits 1e-5).
tp, tp_ids = generate("cudasim", "--grid", "tp=2")
if (tp.returncode or "verify: ok" not in tp.stdout or tp_ids != sim_ids
        or not re.search(r"^verify: grid tp=2 against 1 rank: ok", tp.stdout, re.M)):
    failed.append(f"cudasim tp=2: --verify failed or ids differ\n{tp.stdout}{tp.stderr}")
if failed:
    print("\n".join(failed))
    sys.exit(1)
print(sim.stdout, end="")
