"""How the emitted per-rank program grows with the model and the schedule.

Builds GPT-3 175B (d 12288, 96 heads) at several layer counts, runs the
training pipeline on a grid (default dp=8,tp=8), translates the step to C++
(`braid-translate --braid-to-cpp`) and prints the emitted lines, the
generated elementwise functors among them, and the translation time; then
the same on pp=8 x dp=8 x tp=8 at 96 layers for several micro-batch counts
(the first stage's program). One run each on this machine, named on the
first line. The `dist` issue's target is a program whose lines do not grow
with layers or micro-batches; these figures show where it stands.

usage: python3 bench/compile/program_size.py [--bin build/bin]
       [--layers 24,48,96] [--microbatches 8,16]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import machine  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def model(tmp, layers, batch):
    path = os.path.join(tmp, f"gpt3-{layers}-b{batch}.mlir")
    with open(path, "w") as f:
        f.write(subprocess.run(
            [sys.executable, "-m", "braid.models", "gpt3-175b", "--layers", str(layers),
             "--batch", str(batch)], check=True, capture_output=True, text=True,
            cwd=os.path.join(ROOT, "python")).stdout)
    return path


def emit(bin_dir, source, pipeline, tmp):
    lowered = os.path.join(tmp, "lowered.mlir")
    r = subprocess.run([os.path.join(bin_dir, "braid-opt"), source,
                        f"--braid-training-pipeline={pipeline}", "-o", lowered],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"braid-opt {pipeline} failed:\n{r.stderr.splitlines()[0]}")
    with open(lowered) as f:
        head = f.read(1 << 16)
    entries = re.search(r"braid\.pipeline_entries = \[@([\w.]+)", head)
    entry = entries.group(1) if entries else "step"
    start = time.perf_counter()
    cpp = subprocess.run([os.path.join(bin_dir, "braid-translate"), "--braid-to-cpp",
                          f"--braid-entry={entry}", lowered], check=True,
                         capture_output=True, text=True).stdout
    seconds = time.perf_counter() - start
    return cpp.count("\n"), cpp.count("\nstruct fused_"), seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--layers", default="24,48,96")
    ap.add_argument("--microbatches", default="8,16")
    args = ap.parse_args()
    print(f"machine: {machine.describe()}")
    print("model: gpt3-175b (batch 8 on dp8 x tp8; 512 under the pipeline, 8 x the "
          "micro-batches' 64); emitted C++ of one program")
    print(f"{'grid':<16}{'layers':>7}{'microbatches':>14}{'lines':>10}{'functors':>10}"
          f"{'translate s':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in args.layers.split(",")]:
            lines, functors, seconds = emit(args.bin, model(tmp, n, 8), "grid=dp=8,tp=8", tmp)
            print(f"{'dp8 x tp8':<16}{n:>7}{1:>14}{lines:>10}{functors:>10}{seconds:>13.2f}")
        source = model(tmp, 96, 512)
        for m in [int(x) for x in args.microbatches.split(",")]:
            lines, functors, seconds = emit(args.bin, source,
                                            f"grid=pp=8,dp=8,tp=8 microbatches={m}", tmp)
            print(f"{'pp8 x dp8 x tp8':<16}{96:>7}{m:>14}{lines:>10}{functors:>10}"
                  f"{seconds:>13.2f}")


if __name__ == "__main__":
    main()
