"""The planner's closed form against the compiler's own per-rank simulation.

For a few plans of Llama 3 8B (its full shape, a small global batch), the
same plan goes through the training pipeline (braid-opt
--braid-training-pipeline ... --braid-print-plan: the partitioned per-rank
program, its dist transfers timed by their cost and the overlap scheduler's
order simulated) and through braid-plan --evaluate, both on the H100
description and one compute calibration (--calibration: h100-sxm's, or
roofline, every efficiency 1): the compiler's simulation and the planner
share its rates (dialects/braid/Analysis/StepTiming, lib/CostModel/
ComputeCost), so what differs is what each counts. Printed per plan and kind of transfer:
the seconds issued and exposed per step by each, the step (of a
pipeline: its first stage), and the memory: the static memory plan's arena
against the planner's memory per GPU less its runtime reserve.

usage: python3 bench/planner/crosscheck.py [--bin build/bin] [--calibration h100-sxm|roofline]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = ["tp", "cp", "ep", "pp", "dp", "zero-gather"]
# (grid, zero, micro-batches, global batch, braid-plan spec)
PLANS = [
    ("dp=2,tp=4", 1, 1, 8, "dp=2,tp=4,mbs=4,zero=1"),
    ("dp=2,tp=4", 1, 2, 8, "dp=2,tp=4,mbs=2,zero=1"),
    ("dp=2,tp=4", 3, 1, 8, "dp=2,tp=4,mbs=4,zero=3"),
    ("dp=2,tp=4", 3, 2, 8, "dp=2,tp=4,mbs=2,zero=3"),
    ("dp=4,tp=2", 0, 2, 8, "dp=4,tp=2,mbs=1,zero=0"),
    ("dp=8", 1, 1, 8, "dp=8,mbs=1,zero=1"),
    ("pp=2,dp=2,tp=2", 1, 4, 8, "pp=2,dp=2,tp=2,mbs=1,zero=1"),
]


def kind_of(collective, axes, zero):
    if axes == "tp" or collective == "shift":
        return "tp"
    if axes in ("cp", "ep", "pp"):
        return axes
    if collective == "all_gather" and zero:
        return "zero-gather"
    return "dp"


def compiler(bin_dir, model, grid, zero, micro, calibration):
    out = subprocess.run(
        [os.path.join(bin_dir, "braid-opt"), model,
         f"--braid-training-pipeline=grid={grid} sequence-parallel={'tp=' in grid} "
         f"microbatches={micro} "
         f"dtype=bf16 zero={zero}", f"--braid-print-plan=calibration={calibration}",
         "-o", os.devnull],
        check=True, capture_output=True, text=True).stdout
    issued = dict.fromkeys(KINDS, 0.0)
    exposed = dict.fromkeys(KINDS, 0.0)
    step = compute = None
    for line in out.splitlines():
        # A pipeline's first stage (the planner reports the slowest one,
        # which with the embedding is the first here).
        if line.startswith("stage ") and not line.startswith("stage 0:"):
            continue
        m = re.search(r"(transfer_time|exposed_time) (\w+) over ([\w,]+): ([\d.]+) us", line)
        if m:
            table = issued if m.group(1) == "transfer_time" else exposed
            table[kind_of(m.group(2), m.group(3), zero)] += float(m.group(4)) * 1e-6
        m = re.search(r"step ([\d.]+) us \(compute ([\d.]+) us", line)
        if m:
            step, compute = float(m.group(1)) * 1e-6, float(m.group(2)) * 1e-6
    # The static memory plan's arena (what the runtime allocates; measured
    # peaks equal it): of the first stage's program.
    entry = "step" if micro == 1 and "pp=" not in grid else "step.pp0"
    mem = subprocess.run(
        [os.path.join(bin_dir, "braid-opt"), model,
         f"--braid-training-pipeline=grid={grid} sequence-parallel={'tp=' in grid} "
         f"microbatches={micro} dtype=bf16 zero={zero}",
         f"--braid-print-memory-plan=entry={entry}", "-o", os.devnull],
        check=True, capture_output=True, text=True).stdout
    arena = float(re.search(r"arena_bytes: (\d+)", mem).group(1))
    return issued, exposed, step, compute, arena


def planner(bin_dir, model, gpus, batch, spec, calibration):
    out = subprocess.run(
        [os.path.join(bin_dir, "braid-plan"), model, "--gpus", str(gpus), "--global-batch",
         str(batch), "--evaluate", spec, "--calibration", calibration, "--format", "json"],
        check=True, capture_output=True, text=True).stdout
    p = json.loads(out)["plans"][0]
    memory = p["memory_bytes"] - p["memory"]["reserved"]  # the arena's part
    return p["issued_s"], p["exposed_s"], p["step_s"], p["compute_s"], memory


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--calibration", default="h100-sxm", choices=["h100-sxm", "roofline"])
    args = ap.parse_args()
    work = tempfile.mkdtemp()
    planner_calibration = compiler_calibration = args.calibration
    if args.calibration == "roofline":
        cal = json.load(open(os.path.join(ROOT, "lib", "CostModel", "calibration",
                                          "h100-sxm.json")))
        cal.update(gemm_efficiency=1.0, gemm_half_dim=0, flash_forward_efficiency=1.0,
                   flash_backward_efficiency=1.0, memory_efficiency=1.0, scan_efficiency=1.0)
        planner_calibration = os.path.join(work, "roofline.json")
        json.dump(cal, open(planner_calibration, "w"))
    print(f"compute: {args.calibration}")
    for grid, zero, micro, batch, spec in PLANS:
        model = os.path.join(work, f"llama3-8b-b{batch}.mlir")
        if not os.path.exists(model):
            subprocess.run([sys.executable, "-m", "braid.models", "llama3-8b", "--batch",
                            str(batch), "-o", model], check=True,
                           env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python")))
        gpus = 1
        for size in re.findall(r"=(\d+)", grid):
            gpus *= int(size)
        ci, ce, cs, cc, cm = compiler(args.bin, model, grid, zero, micro, compiler_calibration)
        pi, pe, ps, pc, pm = planner(args.bin, model, gpus, batch, spec, planner_calibration)
        print(f"{grid} zero={zero} micro-batches={micro} (batch {batch}): step compiler "
              f"{cs:.3f} s, planner {ps:.3f} s; compute {cc:.3f} / {pc:.3f} s; memory "
              f"(the arena) {cm / 1e9:.2f} / {pm / 1e9:.2f} GB ({100 * (pm / cm - 1):+.1f}%)")
        print(f"  {'kind':12s} {'issued: compiler':>17s} {'planner':>8s} "
              f"{'exposed: compiler':>18s} {'planner':>8s}")
        for k in KINDS:
            if ci[k] or pi.get(k):
                print(f"  {k:12s} {ci[k]:16.4f}s {pi.get(k, 0):7.4f}s {ce[k]:17.4f}s "
                      f"{pe.get(k, 0):7.4f}s")


if __name__ == "__main__":
    main()
