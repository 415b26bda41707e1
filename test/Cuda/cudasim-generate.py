# REQUIRES: cudasim
# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %braid_src %t
#
# braid-run --generate on the CUDA path (issue 42): the prefill, decode and
# forward programs built against the CUDA backend and kernels on the CPU
# emulation (--backend cudasim), one greedy run with --verify (teacher
# forcing within 1e-5 relative), and the ids equal the CPU backend's for the
# same prompts (greedy: the logits agree far past the gap between the two
# largest), on prompts of different lengths:
#   - llama-tiny (the KV cache kernels), also on two emulated ranks (tp=2,
#     the MPI build of the CUDA runtime) against one: identical ids, logits
#     within 1e-5;
#   - mamba-tiny (the conv and SSM state kernels of
#     runtime/src/cuda/mamba_step.cu; their state-dropping test hook:
#     cudasim-mamba-step.py).
# Few tokens keep it short: the emulation runs about a second per decode step.
import os
import re
import subprocess
import sys

src, tmp = sys.argv[1], sys.argv[2]
env = dict(os.environ, BRAID_RUN_CACHE=os.path.join(tmp, "cache"))
for hook in ("BRAID_TEST_PERTURB_LOGITS", "BRAID_TEST_FORGET_MAMBA_STATE"):
    env.pop(hook, None)

# (model, prompts, tokens, grids run besides one rank)
CASES = [("llama-tiny", "1 2 3 4\n17 3\n", 2, ["tp=2"]),
         ("mamba-tiny", "1 2 3 4 5 6\n17 3\n", 3, [])]


def generate(model, prompts, tokens, backend, *flags):
    r = subprocess.run(["braid-run", model, "--quiet", "--backend", backend, "--generate",
                        str(tokens), "--prompts", prompts, "--verify", *flags],
                       capture_output=True, text=True, env=env)
    return r, dict(re.findall(r"^request (\d+): (.*)$", r.stdout, re.M))


failed = []
for name, text, tokens, grids in CASES:
    model = os.path.join(src, "examples", f"{name}.mlir")
    prompts = os.path.join(tmp, f"{name}-prompts.txt")
    with open(prompts, "w") as f:
        f.write(text)
    sim, sim_ids = generate(model, prompts, tokens, "cudasim")
    if sim.returncode or "verify: ok" not in sim.stdout or len(sim_ids) != 2:
        failed.append(f"{name} cudasim: greedy --verify failed\n{sim.stdout}{sim.stderr}")
    cpu, cpu_ids = generate(model, prompts, tokens, "cpu")
    if cpu.returncode or cpu_ids != sim_ids:
        failed.append(f"{name}: cudasim ids {sim_ids} differ from the CPU's {cpu_ids}\n"
                      f"{cpu.stdout}{cpu.stderr}")
    for grid in grids:
        run, ids = generate(model, prompts, tokens, "cudasim", "--grid", grid)
        if (run.returncode or "verify: ok" not in run.stdout or ids != sim_ids
                or not re.search(rf"^verify: grid {grid} against 1 rank: ok", run.stdout, re.M)):
            failed.append(f"{name} cudasim {grid}: --verify failed or ids differ\n"
                          f"{run.stdout}{run.stderr}")
    print(f"{name}:\n{sim.stdout}", end="")
if failed:
    print("\n".join(failed))
    sys.exit(1)
