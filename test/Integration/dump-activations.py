# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# A partitioned run dumps the step's activations as the global tensors, as
# it dumps parameters: the partitioner records where each value it splits
# lies in its global tensor (braid.result_layouts: split axes, and the
# axes a partial sum's terms are summed over), the emitter announces the
# value with that layout (braid_rt_value_sharded, braid_rt_value_partial)
# and the runtime sums and assembles it.
# - llama-tiny on dp=2 x tp=2 with sequence parallelism, and on dp=2 x cp=2
#   with the contiguous layout: every activation the 1-rank run dumps
#   (embeddings, norms, q/k/v, attention, row-parallel outputs before their
#   reduction, the gathered inputs of column-parallel products, logits) is
#   dumped with the global shape and equals the 1-rank tensor to 1e-5 of its
#   largest value (f32 sums in another order).
# - With the zigzag layout (a sequence in zigzag order need not be split to
#   be permuted), activations stay this rank's local blocks; in every run,
#   a dump of the global shape never differs from the 1-rank tensor.
# Gradients of activations (grad.*) are still local and not checked here.
import os
import subprocess
import sys

import numpy as np

work = sys.argv[1]
model = os.path.join(work, "llama-tiny.mlir")
with open(model, "w") as f:
    f.write(subprocess.run([sys.executable, "-m", "braid.models", "llama-tiny"], check=True,
                           capture_output=True, text=True).stdout)
failures = []


def dump(name, *args):
    out = os.path.join(work, name)
    r = subprocess.run(["braid-run", model, "--steps", "1", "--quiet", "--dump", out, *args],
                       capture_output=True, text=True)
    if r.returncode:
        failures.append(f"{name}: braid-run failed: {r.stdout}{r.stderr}")
    return out


def activations(folder):
    return sorted(f for f in os.listdir(folder) if f.endswith(".npy") and not f.startswith(
        ("grad.", "updated.", "step1.", "owners.", "replicas.", "mirror.")))


reference = dump("one-rank")
names = activations(reference)
for must in ("h0.npy", "logits.npy", "layers.0.attn_proj.npy", "layers.1.down.npy",
             "layers.0.q.npy", "layers.1.attn.npy"):
    if must not in names:
        failures.append(f"the 1-rank run dumped no {must}")
runs = {
    "dp2xtp2-sp": (["--grid", "dp=2,tp=2", "--sequence-parallel"], True),
    "dp2xcp2-contiguous": (["--grid", "dp=2,cp=2", "--cp-layout", "contiguous"], True),
    "dp2xcp2-zigzag": (["--grid", "dp=2,cp=2", "--cp-layout", "zigzag"], False),
}
for run, (args, global_everywhere) in runs.items():
    folder = dump(run, *args)
    if not os.path.isdir(folder):
        continue
    matched = local = 0
    for name in names:
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            # The ring's and the MoE's lowered ops carry no names.
            continue
        a, b = np.load(os.path.join(reference, name)), np.load(path)
        if a.shape != b.shape:
            local += 1
            if global_everywhere:
                failures.append(f"{run}: {name} dumped as {b.shape}, not the global {a.shape}")
            continue
        scale = max(float(np.abs(a).max()), 1e-30)
        error = float(np.abs(a.astype(np.float64) - b).max()) / scale
        if error > 1e-5:
            failures.append(f"{run}: {name} differs from the 1-rank tensor by {error:.3g} "
                            "of its largest value")
        matched += 1
    print(f"{run}: {matched} activations global and equal, {local} local")
    if global_everywhere and matched < 40:
        failures.append(f"{run}: only {matched} activations compared")

if failures:
    print("\n".join(failures))
    sys.exit(1)
