# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# bf16 storage (f32 accumulation) against the fp32 numpy reference, for every
# tiny preset. Bounds, with u = 2^-8 the unit roundoff of bf16 (8 significant
# bits, rounded to nearest even):
# - logits and the loss: cross-entropy is 1-Lipschitz in each of logsumexp
#   and the picked logit under the max norm, so
#   |loss_bf16 - loss_ref| <= 2 * max|logits_bf16 - logits_ref| (+ f32 slack).
#   This ties the loss to the measured logit error, whatever its size.
# - activations of dense models (no router): every stored tensor adds at most
#   one rounding (<= u relative) on top of the error it inherits; the
#   embedding output is rounded twice (table init, store) and a layer has at
#   most 12 stores on its longest path (norm, q/k/v, attention, projection,
#   residual add, norm, gate/up, glu, down, residual add), so the output of
#   layer i is within (2 + 12 i) u of the reference, relative to its max.
#   With a router a rounding can flip a token's expert choice, which changes
#   that token's output by O(1): MoE activations are bounded only through the
#   loss check above.
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from braid_ref import models  # noqa: E402

U = 2.0 ** -8
work = sys.argv[1]
failures = []


def rel(got, want):
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


for preset in ["gpt-tiny", "llama-tiny", "mamba-tiny", "moe-tiny", "hybrid-tiny"]:
    model = os.path.join(work, preset + ".mlir")
    with open(model, "w") as f:
        f.write(subprocess.run([sys.executable, "-m", "braid.models", preset], check=True,
                               capture_output=True, text=True).stdout)
    dump = os.path.join(work, preset)
    run = subprocess.run(["braid-run", model, "--dtype", "bf16", "--seed", "3", "--quiet",
                          "--optimizer", "none",
                          "--dump", dump], capture_output=True, text=True)
    if run.returncode != 0:
        failures.append(f"{preset}: braid-run failed:\n{run.stdout}{run.stderr}")
        continue
    cfg, params, tokens, labels = models.preset_case(preset, seed=3, exact=True)
    record = {}
    loss = float(models.ops.cross_entropy(models.logits(cfg, params, tokens, record=record),
                                          labels))
    got_loss = float(np.load(os.path.join(dump, "loss.npy")))
    logit_err = float(np.max(np.abs(np.load(os.path.join(dump, "logits.npy"))
                                    - record["logits"])))
    loss_bound = 2 * logit_err + 1e-6 * abs(loss)
    if not abs(got_loss - loss) <= loss_bound:
        failures.append(f"{preset}: |loss error| {abs(got_loss - loss):.3g} > "
                        f"2 max|logit error| = {loss_bound:.3g}")
    routed = cfg.get("experts", 0) > 0
    worst = []
    for i in range(cfg["layers"] + 1):
        name = f"h{i}"
        err = rel(np.load(os.path.join(dump, name + ".npy")), record[name])
        worst.append(err)
        if not routed and not err <= (2 + 12 * i) * U:
            failures.append(f"{preset}: {name} relative error {err:.3g} > "
                            f"{(2 + 12 * i) * U:.3g}")
    print(f"{preset}: loss {got_loss:.6f} reference {loss:.6f} (relative "
          f"{abs(got_loss - loss) / loss:.1e}, bound {loss_bound / loss:.1e}); layer outputs "
          f"relative error {' '.join(f'{e:.1e}' for e in worst)}"
          + (" (routed: loss bound only)" if routed else ""))

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
