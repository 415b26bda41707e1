# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# Training steps compiled by braid-run (--braid-autodiff, --braid-optimizer)
# against the independent numpy reference (braid_ref.autograd / .train), for
# every tiny preset:
# - the gradient of every parameter after one step, fp32, against the float64
#   reference: relative error <= 1e-5, i.e. max|a - b| <= 1e-5 * max|b| per
#   tensor. A gradient that vanishes in exact arithmetic (GPT's key bias:
#   softmax ignores a shift common to a query's scores) holds only rounding
#   noise: float64 puts it below 1e-15 of the model's largest gradient, and
#   the fp32 one must stay below 1e-5 of it;
# - the losses of 10 AdamW steps (lr 1e-3, betas 0.9/0.95, eps 1e-8, weight
#   decay 0.1, clipping at global norm 1): relative error <= 1e-4; the loss
#   decreases;
# - recompute none, selective and full give bit-identical losses;
# - on a medium Llama (4 layers, hidden 256, seq 512, batch 2), where
#   activations dominate, the planned peak falls from none to selective to
#   full.
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from braid_ref import autograd, models, train  # noqa: E402

work = sys.argv[1]
failures = []
SEED = 5


def braid_run(model, *args):
    r = subprocess.run(["braid-run", model, "--seed", str(SEED), "--quiet", *args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"braid-run {' '.join(args)} failed:\n{r.stdout}{r.stderr}")
    losses = [float(x) for x in re.findall(r"^step \d+ loss (\S+)$", r.stdout, re.M)]
    peak = int(re.search(r"^planned_peak_bytes: (\d+)$", r.stdout, re.M).group(1))
    return losses, peak


for preset in ["gpt-tiny", "llama-tiny", "mamba-tiny", "moe-tiny", "hybrid-tiny"]:
    model = os.path.join(work, preset + ".mlir")
    with open(model, "w") as f:
        f.write(subprocess.run([sys.executable, "-m", "braid.models", preset], check=True,
                               capture_output=True, text=True).stdout)
    try:
        # Gradients of one step.
        dump = os.path.join(work, preset + "-grads")
        braid_run(model, "--steps", "1", "--dump", dump)
        cfg, params, tokens, labels = models.preset_case(preset, seed=SEED, exact=True)
        _, grads = autograd.grad_of_loss(cfg, params, tokens, labels,
                                         compute_dtype=np.float64)
        scale = max(float(np.max(np.abs(g))) for g in grads.values())
        worst = (0.0, "")
        for name, want in grads.items():
            got = np.load(os.path.join(dump, f"grad.{name}.npy")).astype(np.float64)
            want = np.asarray(want, dtype=np.float64)
            if float(np.max(np.abs(want))) <= 1e-15 * scale:  # zero in exact arithmetic
                if not float(np.max(np.abs(got))) <= 1e-5 * scale:
                    failures.append(f"{preset}: gradient of {name} should vanish, found "
                                    f"{float(np.max(np.abs(got))):.3g}")
                continue
            err = float(np.max(np.abs(got - want))) / float(np.max(np.abs(want)))
            worst = max(worst, (err, name))
            if not err <= 1e-5:
                failures.append(f"{preset}: gradient of {name}: relative error {err:.3g}")

        # Ten AdamW steps.
        losses, peak_none = braid_run(model, "--steps", "10")
        ref_losses, _, _ = train.train(preset, seed=SEED, steps=10, compute_dtype=np.float32)
        traj = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses))
        if len(losses) != 10 or not traj <= 1e-4:
            failures.append(f"{preset}: loss trajectory {losses} vs {ref_losses} "
                            f"(relative {traj:.3g})")
        if not losses[-1] < losses[0]:
            failures.append(f"{preset}: the loss did not decrease: {losses}")

        # Mixed precision (bf16 compute copies of f32 master weights, f32
        # optimizer state) follows the fp32 trajectory: each step's loss is
        # within the bf16 forward bound (about 1e-3 relative, see
        # numerics-bf16.py) of the fp32 loss at nearly the same weights, and
        # AdamW moves each weight by at most about lr per step, so after 10
        # steps the losses may part by a few 1e-3; 1e-2 leaves room.
        mixed, _ = braid_run(model, "--steps", "10", "--dtype", "bf16")
        drift = max(abs(a - b) / abs(b) for a, b in zip(mixed, losses))
        if not (drift <= 1e-2 and mixed[-1] < mixed[0]):
            failures.append(f"{preset}: mixed precision {mixed} vs fp32 {losses}")

        # Recompute changes memory, not numbers.
        for policy in ["selective", "full"]:
            l, _ = braid_run(model, "--steps", "3", "--recompute", policy)
            if l != losses[:3]:
                failures.append(f"{preset}: recompute={policy} changed the losses: {l} vs "
                                f"{losses[:3]}")
        print(f"{preset}: {len(grads)} gradients, worst relative error {worst[0]:.1e} "
              f"({worst[1]}); 10 AdamW steps {losses[0]:.4f} -> {losses[-1]:.4f}, "
              f"trajectory relative error {traj:.1e}; mixed precision within {drift:.1e}; "
              f"recompute: identical losses")
    except RuntimeError as error:
        failures.append(f"{preset}: {error}")

# Planned memory of a medium Llama's training step under each policy.
medium = os.path.join(work, "medium.mlir")
with open(medium, "w") as f:
    f.write(subprocess.run([sys.executable, "-m", "braid.models", "llama3-8b", "--layers", "4",
                            "--hidden", "256", "--heads", "8", "--kv-heads", "4", "--ffn",
                            "512", "--vocab", "1000", "--seq", "512", "--batch", "2"],
                           check=True, capture_output=True, text=True).stdout)
peaks = {}
for policy in ["none", "selective", "full"]:
    plan = subprocess.run(["braid-opt", medium, "--braid-expand-expert-ffn",
                           f"--braid-autodiff=recompute={policy}", "--braid-optimizer",
                           "--braid-print-memory-plan", "-o", "/dev/null"],
                          check=True, capture_output=True, text=True).stdout
    fields = dict(re.findall(r"^(arena_bytes|persistent_bytes): (\d+)$", plan, re.M))
    peaks[policy] = (int(fields["arena_bytes"]), int(fields["persistent_bytes"]))
print("medium llama, planned peak (activations) per recompute policy: " + ", ".join(
    f"{p} {a / 2**20:.1f} MiB ({(a - q) / 2**20:.1f} MiB)" for p, (a, q) in peaks.items()))
if not peaks["none"][0] > peaks["selective"][0] > peaks["full"][0]:
    failures.append(f"planned peaks do not fall from none to selective to full: {peaks}")

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
