# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# Every tiny preset, compiled by braid-run and executed on the CPU runtime,
# against the independent numpy reference (test/lib/braid_ref) from the same
# deterministic initialization: the loss, the embedding output, every layer's
# output and the logits agree in fp32 to a relative error of 1e-5
# (max |a - b| / max |b| per tensor). Both sides compute in f32 with f32
# accumulation; they differ only in summation order, which moves results by
# a few ulp (2^-24 each) per accumulated term, far below 1e-5 at these sizes.
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from braid_ref import models  # noqa: E402

TOL = 1e-5
work = sys.argv[1]
failures = []
for preset in ["gpt-tiny", "llama-tiny", "mamba-tiny", "moe-tiny", "hybrid-tiny"]:
    model = os.path.join(work, preset + ".mlir")
    with open(model, "w") as f:
        f.write(subprocess.run([sys.executable, "-m", "braid.models", preset], check=True,
                               capture_output=True, text=True).stdout)
    dump = os.path.join(work, preset)
    run = subprocess.run(["braid-run", model, "--seed", "7", "--quiet", "--dump", dump,
                          "--optimizer", "none"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        failures.append(f"{preset}: braid-run failed:\n{run.stdout}{run.stderr}")
        continue
    lines = dict(line.split(": ") for line in run.stdout.splitlines() if ": " in line)
    if lines["planned_peak_bytes"] != lines["measured_peak_bytes"]:
        failures.append(f"{preset}: planned peak {lines['planned_peak_bytes']} != measured "
                        f"{lines['measured_peak_bytes']}")

    cfg, params, tokens, labels = models.preset_case(preset, seed=7, exact=True)
    if not np.array_equal(np.load(os.path.join(dump, "tokens.npy")), tokens):
        failures.append(f"{preset}: generated tokens differ from the reference")
    record = {}
    loss = models.ops.cross_entropy(models.logits(cfg, params, tokens, record=record), labels)
    record["loss"] = loss
    worst = 0.0
    for name, want in record.items():
        got = np.load(os.path.join(dump, name + ".npy"))
        want = np.asarray(want, dtype=np.float64)
        err = np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30)
        worst = max(worst, err)
        if not err <= TOL:
            failures.append(f"{preset}: {name} relative error {err:.3g} > {TOL}")
    print(f"{preset}: loss {float(np.load(os.path.join(dump, 'loss.npy'))):.7f} "
          f"reference {float(loss):.7f}, {len(record)} tensors, worst relative error {worst:.2e}")

for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
