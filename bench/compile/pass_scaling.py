"""How each pass of the training pipeline, and the C++ emitter, scale with the
number of layers, under the configurations the planner chooses.

Builds GPT-3 175B (d 12288, 96 heads, bf16) at several layer counts and, for
each configuration, runs `braid-opt --braid-training-pipeline` with
-mlir-timing and then `braid-translate --braid-to-cpp --braid-output-dir`,
which emits every program it produced (a pipeline's ranks each get one) from
one parse of the module. It prints each pass's seconds per
layer count, the emitter's and the total, and each one's log-log slope over
the layer counts (a least-squares fit: 1.0 is linear in the model, 2.0
quadratic), and judges them against the bar: every pass and the emitter at
most `--max-slope`, the largest model's total under `--budget` seconds.

The default configurations: dp=8 x tp=8 with sequence parallelism and
selective recompute under each ZeRO stage (zero1 is the planner's usual
choice for this model), and pipelines of pp=4 x dp=2 x tp=8 with micro-batches
(1F1B, interleaved). Times are the best of `--repeat` runs on this machine,
named on the first line; passes taking under 2% of the pipeline at the largest
model are summed in "other" (their slopes are noise).

usage: python3 bench/compile/pass_scaling.py [--bin build/bin]
       [--layers 12,24,48,96] [--configs zero0,zero1,...] [--repeat 3]
"""
import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import machine  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

SPMD = "grid=dp=8,tp=8 sequence-parallel=true recompute=selective"
PIPELINE = "grid=pp=4,dp=2,tp=8 sequence-parallel=true recompute=selective zero=1 microbatches=4"
CONFIGS = {
    "zero0": f"{SPMD} zero=0",
    "zero1": f"{SPMD} zero=1",
    "zero2": f"{SPMD} zero=2",
    "zero3": f"{SPMD} zero=3",
    "pp-1f1b": f"{PIPELINE} schedule=1f1b",
    "pp-interleaved": f"{PIPELINE} schedule=interleaved virtual-stages=2",
}
TIMING = re.compile(r"\s*([\d.]+) \(\s*[\d.]+%\)(?:\s+[\d.]+ \(\s*[\d.]+%\))?\s+(\S+)$")


def build_model(tmp, layers):
    path = os.path.join(tmp, f"gpt3-{layers}.mlir")
    with open(path, "w") as f:
        f.write(subprocess.run(
            [sys.executable, "-m", "braid.models", "gpt3-175b", "--layers", str(layers),
             "--batch", "8", "--dtype", "bf16"], check=True, capture_output=True, text=True,
            cwd=os.path.join(ROOT, "python")).stdout)
    return path


def run_once(bin_dir, model, options, out):
    """Seconds per pass (-mlir-timing), of the emitter and in total."""
    r = subprocess.run([os.path.join(bin_dir, "braid-opt"), model,
                        f"--braid-training-pipeline={options}", "-o", out, "-mlir-timing"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"braid-opt failed on {options}:\n{r.stderr[-2000:]}")
    times = {}
    for line in r.stderr.splitlines():
        m = TIMING.match(line)
        if m and m.group(2).endswith("Pass"):
            times[m.group(2)] = times.get(m.group(2), 0.0) + float(m.group(1))
    total = re.search(r"Total Execution Time: ([\d.]+) seconds", r.stderr)
    times["pipeline"] = float(total.group(1))
    # Every program (a pipeline's ranks) from one parse of the module, as
    # braid-run emits them.
    programs_dir = out + ".programs"
    start = time.perf_counter()
    r = subprocess.run([os.path.join(bin_dir, "braid-translate"), "--braid-to-cpp",
                        f"--braid-output-dir={programs_dir}", out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"braid-translate failed on {options}:\n{r.stderr[-2000:]}")
    times["braid-translate"] = time.perf_counter() - start
    times["total"] = times["pipeline"] + times["braid-translate"]
    return times


def slope(layers, seconds):
    """The least-squares slope of log(seconds) over log(layers)."""
    xs = [math.log(n) for n in layers]
    ys = [math.log(max(s, 1e-6)) for s in seconds]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def report(name, options, layers, rows, max_slope, budget):
    """Prints one configuration's table; returns whether it meets the bar."""
    last = layers[-1]
    passes = sorted((p for p in rows[last] if p.endswith("Pass")),
                    key=lambda p: -rows[last][p])
    shown = [p for p in passes if rows[last][p] >= 0.02 * rows[last]["pipeline"]]
    for n in layers:
        rows[n]["other"] = sum(rows[n].get(p, 0.0) for p in passes if p not in shown)
    columns = shown + ["other", "pipeline", "braid-translate", "total"]
    width = max(12, *(len(c) for c in columns))
    print(f"\n{name}: {options}")
    print("layers " + " ".join(f"{c:>{width}}" for c in columns))
    for n in layers:
        print(f"{n:6d} " + " ".join(f"{rows[n].get(c, 0.0):{width}.4f}" for c in columns))
    slopes = {c: slope(layers, [rows[n].get(c, 0.0) for n in layers]) for c in columns}
    print("slope  " + " ".join(f"{slopes[c]:{width}.2f}" for c in columns))
    judged = shown + ["braid-translate"]
    worst = max(judged, key=lambda c: slopes[c])
    ok = slopes[worst] <= max_slope and rows[last]["total"] <= budget
    print(f"steepest: {worst} {slopes[worst]:.2f} (bar {max_slope}); {last} layers in "
          f"{rows[last]['total']:.2f} s, {rows[last]['total'] / budget:.0%} of {budget} s, "
          f"{rows[last]['total'] / last * 1000:.1f} ms per layer: {'ok' if ok else 'OVER'}")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--layers", default="12,24,48,96")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="names among " + ", ".join(CONFIGS))
    ap.add_argument("--options", action="append", default=[],
                    help="an extra configuration: training-pipeline options")
    ap.add_argument("--repeat", type=int, default=3, help="runs per point (the best is kept)")
    ap.add_argument("--max-slope", type=float, default=1.15)
    ap.add_argument("--budget", type=float, default=1.5,
                    help="seconds the largest model may take, pipeline and emitter")
    args = ap.parse_args()
    layers = [int(x) for x in args.layers.split(",")]
    configs = [(c, CONFIGS[c]) for c in args.configs.split(",") if c]
    configs += [(f"options{i}", o) for i, o in enumerate(args.options)]
    print(f"machine: {machine.describe()}")
    print(f"model: gpt3-175b bf16, batch 8; seconds (best of {args.repeat}) per pass "
          f"(-mlir-timing), braid-translate of every program, their total")
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        models = {n: build_model(tmp, n) for n in layers}
        for name, options in configs:
            rows = {}
            for n in layers:
                out = os.path.join(tmp, f"{name}-{n}.mlir")
                runs = [run_once(args.bin, models[n], options, out) for _ in range(args.repeat)]
                rows[n] = {k: min(r.get(k, 0.0) for r in runs) for k in runs[0]}
            if not report(name, options, layers, rows, args.max_slope, args.budget):
                failed.append(name)
    print("\n" + ("every configuration meets the bar" if not failed
                  else "over the bar: " + ", ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
