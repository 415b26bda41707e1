"""How each pass of the training pipeline scales with the number of layers.

Builds GPT-3 175B (d 12288, 96 heads) at several layer counts, runs
`braid-opt --braid-training-pipeline` on a grid (default dp=8,tp=8) with
-mlir-timing, and prints each pass's time per layer count and its log-log
slope over the range (1.0: linear in the model; 2.0: quadratic). The figures
are one run each on this machine, named on the first line.

usage: python3 bench/compile/pass_scaling.py [--bin build/bin]
       [--grid dp=8,tp=8] [--layers 24,48,96,192,384]
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import machine  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PASSES = ["BraidPartitionPass", "BraidExpandExpertFFNPass", "BraidAutodiffPass",
          "BraidOptimizerPass", "ConvertBraidToDistPass", "BraidScheduleOverlapPass"]


def times(braid_opt, model, grid):
    r = subprocess.run([braid_opt, model, f"--braid-training-pipeline=grid={grid}",
                        "-o", os.devnull, "-mlir-timing"], capture_output=True, text=True,
                       check=True)
    out = {}
    for line in r.stderr.splitlines():
        m = re.match(r"\s*([\d.]+) \(\s*[\d.]+%\)(?:\s+[\d.]+ \(\s*[\d.]+%\))?\s+(\S+)$", line)
        if m and m.group(2) in PASSES:
            out[m.group(2)] = out.get(m.group(2), 0.0) + float(m.group(1))
    total = re.search(r"Total Execution Time: ([\d.]+) seconds", r.stderr)
    out["total"] = float(total.group(1))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--grid", default="dp=8,tp=8")
    ap.add_argument("--layers", default="24,48,96,192,384")
    args = ap.parse_args()
    layers = [int(x) for x in args.layers.split(",")]
    print(f"machine: {machine.describe()}")
    print(f"model: gpt3-175b, grid {args.grid}, seconds per pass (-mlir-timing)")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in layers:
            model = os.path.join(tmp, f"gpt3-{n}.mlir")
            with open(model, "w") as f:
                f.write(subprocess.run(
                    [sys.executable, "-m", "braid.models", "gpt3-175b", "--layers", str(n),
                     "--batch", "8"], check=True, capture_output=True, text=True,
                    cwd=os.path.join(ROOT, "python")).stdout)
            rows[n] = times(os.path.join(args.bin, "braid-opt"), model, args.grid)
    names = [p for p in PASSES + ["total"] if all(p in rows[n] for n in layers)]
    print("layers " + " ".join(f"{p:>24}" for p in names))
    for n in layers:
        print(f"{n:6d} " + " ".join(f"{rows[n][p]:24.4f}" for p in names))
    first, last = layers[0], layers[-1]
    print("slope  " + " ".join(
        f"{math.log(rows[last][p] / rows[first][p]) / math.log(last / first):24.2f}"
        for p in names))


if __name__ == "__main__":
    main()
