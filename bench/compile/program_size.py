"""How the emitted per-rank program grows with the model and the schedule,
rolled (the default: repeated statement groups printed as loops over tables,
lib/Target/Cpp/EmitRoll.cpp) against the same program printed statement by
statement (--braid-roll-repeats=false), in one run on this machine.

Builds GPT-3 175B (d 12288, 96 heads) at several layer counts, runs the
training pipeline on dp=8,tp=8, translates the step to C++ and prints, for
both printings, the emitted lines split into code (function bodies) and data
(the roller's tables, the parameter descriptors), and the translation time;
then the same on pp=8 x dp=8 x tp=8 at 96 layers for several micro-batch
counts (the first stage's program). Last, the `dist` issue's target: that
model and grid at 64 micro-batches from the model to built per-stage
binaries (`braid-run --compile-only`, a fresh build cache), timed as a whole
and by part.

usage: python3 bench/compile/program_size.py [--bin build/bin]
       [--layers 24,48,96] [--microbatches 8,16,64] [--no-build]
"""
import argparse
import os
import re
import shutil
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


def split_lines(cpp):
    """(code, data) lines of an emitted program: code is the function
    bodies' statements, data the roller's static tables inside them and
    everything outside functions (descriptors, shape arrays, functors)."""
    code = data = 0
    in_function = in_table = False
    for line in cpp.split("\n"):
        if line.startswith("void fn_"):
            in_function = True
        if not in_function:
            data += 1
            continue
        if re.match(r"\s*static const .*\[\d+\]\[\d+\] = \{$", line):
            in_table = True
        if in_table:
            data += 1
            in_table = line.strip() != "};"
            continue
        code += 1
        if line == "}":
            in_function = False
    return code, data


def lower(bin_dir, source, pipeline, tmp):
    lowered = os.path.join(tmp, "lowered.mlir")
    r = subprocess.run([os.path.join(bin_dir, "braid-opt"), source,
                        f"--braid-training-pipeline={pipeline}", "-o", lowered],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"braid-opt {pipeline} failed:\n{r.stderr.splitlines()[0]}")
    with open(lowered) as f:
        head = f.read(1 << 16)
    entries = re.search(r"braid\.pipeline_entries = \[@([\w.]+)", head)
    return lowered, entries.group(1) if entries else ""


def emit(bin_dir, lowered, entry, roll):
    start = time.perf_counter()
    cpp = subprocess.run([os.path.join(bin_dir, "braid-translate"), "--braid-to-cpp",
                          f"--braid-program={entry}", f"--braid-roll-repeats={roll}", lowered],
                         check=True, capture_output=True, text=True).stdout
    seconds = time.perf_counter() - start
    code, data = split_lines(cpp)
    return cpp.count("\n"), code, data, seconds


def row(grid, layers, microbatches, rolled, plain):
    lines, code, data, seconds = rolled
    plain_lines, plain_code, _, plain_seconds = plain
    print(f"{grid:<16}{layers:>7}{microbatches:>5}{lines:>9}{code:>7}{data:>7}{seconds:>7.2f}"
          f"{plain_lines:>10}{plain_code:>9}{plain_seconds:>8.2f}{plain_lines / lines:>8.1f}x")


def build(bin_dir, source, tmp):
    """Seconds of `braid-run --compile-only` on a fresh cache, and its
    stage binaries."""
    cache = os.path.join(tmp, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    env = dict(os.environ, BRAID_RUN_CACHE=cache)
    start = time.perf_counter()
    r = subprocess.run([os.path.join(bin_dir, "braid-run"), source, "--grid", "pp=8,dp=8,tp=8",
                        "--microbatches", "64", "--compile-only"],
                       capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if r.returncode != 0:
        sys.exit(f"braid-run --compile-only failed:\n{r.stdout}{r.stderr}")
    return seconds, len([p for p in os.listdir(cache) if p.endswith(".bin")])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--layers", default="24,48,96")
    ap.add_argument("--microbatches", default="8,16,64")
    ap.add_argument("--no-build", action="store_true",
                    help="skip the model-to-binaries timing")
    args = ap.parse_args()
    print(f"machine: {machine.describe()}")
    print("model: gpt3-175b (batch 8 on dp8 x tp8; 512 under the pipeline, 8 x the "
          "micro-batches' 64); emitted C++ of one program (the first stage's)")
    print(f"{'':<35}{'rolled (default)':<30}{'statement by statement':<28}")
    print(f"{'grid':<16}{'layers':>7}{'mb':>5}{'lines':>9}{'code':>7}{'data':>7}{'s':>7}"
          f"{'lines':>10}{'code':>9}{'s':>8}{'ratio':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(x) for x in args.layers.split(",")]:
            lowered, entry = lower(args.bin, model(tmp, n, 8), "grid=dp=8,tp=8", tmp)
            row("dp8 x tp8", n, 1, emit(args.bin, lowered, entry, "true"),
                emit(args.bin, lowered, entry, "false"))
        source = model(tmp, 96, 512)
        for m in [int(x) for x in args.microbatches.split(",")]:
            lowered, entry = lower(args.bin, source, f"grid=pp=8,dp=8,tp=8 microbatches={m}", tmp)
            row("pp8 x dp8 x tp8", 96, m, emit(args.bin, lowered, entry, "true"),
                emit(args.bin, lowered, entry, "false"))
        print("(code: statements in function bodies; data: the roller's tables, "
              "descriptors, shape arrays and functors; s: braid-translate of the text IR, "
              "parsing included)")
        if args.no_build:
            return
        # From the model to the eight stage binaries at 64 micro-batches.
        start = time.perf_counter()
        source = model(tmp, 96, 512)
        built_model = time.perf_counter() - start
        start = time.perf_counter()
        lowered, entry = lower(args.bin, source, "grid=pp=8,dp=8,tp=8 microbatches=64", tmp)
        lowered_s = time.perf_counter() - start
        stages = re.findall(r"@(step\.pp\d+)",
                            re.search(r"braid\.pipeline_entries = \[[^]]*\]",
                                      open(lowered).read(1 << 16)).group(0))
        # The median of three runs per stage: the 2-core machine is noisy.
        translate = [sorted(emit(args.bin, lowered, s, "true")[3] for _ in range(3))[1]
                     for s in stages]
        # The same from MLIR bytecode: what of it is parsing the text.
        bytecode = os.path.join(tmp, "lowered.mlirbc")
        subprocess.run([os.path.join(args.bin, "braid-opt"), lowered, "--emit-bytecode",
                        "-o", bytecode], check=True)
        translate_bc = [sorted(emit(args.bin, bytecode, s, "true")[3] for _ in range(3))[1]
                        for s in stages]
        binaries_s, count = build(args.bin, source, tmp)
        print(f"\npp8 x dp8 x tp8, 96 layers, 64 micro-batches: model built by Python "
              f"{built_model:.2f} s; braid-run --compile-only (pipeline, emission and "
              f"{count} stage builds, {os.cpu_count()} at a time) {binaries_s:.1f} s; "
              f"model to binaries {built_model + binaries_s:.1f} s (target < 60 s)")
        print(f"  apart: braid-opt pipeline {lowered_s:.2f} s; braid-translate per stage "
              f"(median of 3) {min(translate):.2f}-{max(translate):.2f} s (target < 2 s), "
              f"from bytecode {min(translate_bc):.2f}-{max(translate_bc):.2f} s "
              f"(the module holds all {len(stages)} stages)")


if __name__ == "__main__":
    main()
