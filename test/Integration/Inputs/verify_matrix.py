"""Runs braid-run --verify over a matrix of (preset, flags): the shared body of
the differential tests (spmd-verify.py, cp-verify.py, pipeline-verify.py).

Presets are built with the Python builder at its defaults (MoE capacity
factor 1.25, capacity per group of one sequence); suffixes "-b<N>", "-l<N>",
"-s<N>", "-h<N>" and "-c<F>" build batch N, N layers, sequence length N, N
attention heads and capacity factor F. Every run is STEPS AdamW steps at braid-run's defaults (eps 1e-8):
braid-run --verify judges step 1's gradients and updates and every step's
loss (include/braid/Driver/Verify.h). For models with experts, the runner also
counts the assignments the 1-rank run dropped (its router logits, routed and
slotted again in numpy by braid_ref) and returns them per case, so a test can
show that dropping happened while the plan still equalled one rank.
"""
import glob
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "lib"))
import numpy as np  # noqa: E402

from braid_ref import ops  # noqa: E402

STEPS = 10


def build(work, preset):
    name, extra = preset, []
    # Suffixes, in any order: -b<N> batch, -l<N> layers, -s<N> sequence,
    # -h<N> attention heads, -c<F> capacity factor.
    flag = {"b": "--batch", "l": "--layers", "s": "--seq", "h": "--heads",
            "c": "--capacity-factor"}
    while True:
        stem, _, suffix = name.rpartition("-")
        if suffix[:1] in flag and re.fullmatch(r"\d+(\.\d+)?", suffix[1:]):
            extra += [flag[suffix[0]], suffix[1:]]
            name = stem
        else:
            break
    path = os.path.join(work, preset + ".mlir")
    with open(path, "w") as f:
        f.write(subprocess.run([sys.executable, "-m", "braid.models", name, *extra],
                               check=True, capture_output=True, text=True).stdout)
    return path


def model_attr(text, key):
    m = re.search(rf"\b{key} = (\d+) : i64", text[:4000])
    return int(m.group(1)) if m else None


def dropped_assignments(model_path, dump_dir):
    """(dropped, all) assignments of step 1 over every MoE layer, from the
    router logits in dump_dir, or None for a model without experts."""
    text = open(model_path).read()
    experts, k = model_attr(text, "experts"), model_attr(text, "top_k")
    if experts is None:
        return None
    capacity, seq = model_attr(text, "capacity"), model_attr(text, "seq")
    group = model_attr(text, "moe_group_size") or seq
    dropped = total = 0
    files = sorted(glob.glob(os.path.join(dump_dir, "step1.layers.*.router_logits.npy")))
    assert files, f"no router logits dumped in {dump_dir}"
    for path in files:
        logits = np.load(path)
        # Top-k with ties to the lower expert (braid.router).
        idx = np.argsort(-logits, axis=1, kind="stable")[:, :k]
        slots = ops.assign_slots(idx, experts, capacity, logits.shape[0] // group)
        dropped += int((slots < 0).sum())
        total += slots.size
    return dropped, total


def run(work, matrix, expect="PASS"):
    """Prints one line per case; returns the built models by preset, the
    failures and, per case label of a model with experts, its (dropped,
    all) assignments of step 1. With expect="FAIL" (broken plans: a case's
    flags inject a fault) a case fails unless --verify judged it FAIL and
    exited 1."""
    paths, failures, drops = {}, [], {}
    if os.environ.get("BRAID_TEST_SANITIZED"):
        # The sanitized build (lit sets this) checks memory and undefined
        # behaviour, which every case of a matrix drives through the same
        # code: a third of the cases, spread over it, keep its time within
        # CI's (each case is compiled and run under ASan and UBSan there).
        # The plain build runs them all.
        print(f"sanitized build: {len(matrix[::3])} of the {len(matrix)} cases (every third)")
        matrix = matrix[::3]
    for n, (preset, flags) in enumerate(matrix):
        if preset not in paths:
            paths[preset] = build(work, preset)
        dump = os.path.join(work, f"case{n}")
        start = time.time()
        r = subprocess.run(["braid-run", paths[preset], "--steps", str(STEPS), "--verify",
                            "--quiet", "--dump", dump, *flags],
                           capture_output=True, text=True)
        lines = [l for l in r.stdout.splitlines() if l.startswith("verify:")]
        label = f"{preset} {' '.join(flags)}"
        extra = ""
        if r.returncode == 0 and expect == "PASS":
            counted = dropped_assignments(paths[preset], os.path.join(dump, "reference"))
            if counted is not None:
                drops[label] = counted
                extra = f"; dropped {counted[0]} of {counted[1]} assignments"
        print(f"{label}: {'; '.join(l[8:] for l in lines)}{extra} ({time.time() - start:.1f} s)")
        judged = (r.returncode == 0 and "verify: PASS" in lines if expect == "PASS"
                  else r.returncode == 1 and any(l.startswith("verify: FAIL") for l in lines))
        if not judged:
            failures.append(f"{label}: expected verify: {expect}, exit {r.returncode}\n"
                            f"{r.stdout}{r.stderr}")
        subprocess.run(["rm", "-rf", dump])
    return paths, failures, drops
