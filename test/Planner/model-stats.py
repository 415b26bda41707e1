# RUN: rm -rf %t && mkdir -p %t
# RUN: %python %s %t
#
# The planner's cost model counts a model's parameters and forward FLOPs from
# its braid.model dictionary alone (lib/Planner/ModelShape.cpp); the counts
# must equal what --braid-model-stats finds walking the IR the builder emits
# (each op's OpCostInterface), for every preset: every family, GQA, biases,
# tied heads, experts and hybrid layer plans.
import os
import subprocess
import sys

from braid.presets import PRESETS

work = sys.argv[1]
KEYS = ("parameters", "parameters_active", "forward_flops_per_token")
# Every preset; the large ones cut to a few layers (a layer's counts do not
# depend on how many there are; Jamba's 8 are one period of its layer plan).
MODELS = [(name, [] if name.endswith("-tiny") else
           ["--layers", "8" if name == "jamba-v0.1" else "2"]) for name in PRESETS]


def stats(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        key, _, value = line.partition(": ")
        if key in KEYS:
            got[key] = float(value)
    return got


failures = 0
for preset, extra in MODELS:
    path = os.path.join(work, preset + ".mlir")
    subprocess.run([sys.executable, "-m", "braid.models", preset, *extra, "-o", path], check=True)
    ir = stats(["braid-opt", path, "--braid-model-stats", "-o", os.devnull])
    planner = stats(["braid-plan", path, "--model-stats"])
    for key in KEYS:
        ok = ir.get(key) == planner.get(key)
        failures += not ok
        print(f"{preset:14s} {key:24s} IR {ir.get(key):>16.0f} planner {planner.get(key):>16.0f}"
              f" {'ok' if ok else 'DIFFERENT'}")
sys.exit(1 if failures else 0)
