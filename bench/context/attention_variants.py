"""Context-parallel attention variants, measured on CPU ranks.

Runs one long-sequence model (llama-tiny, 2 layers, batch 1, seq 2048 by
default) on one rank and on cp ranks under each attention variant (all-gather,
Ulysses, ring) and sequence layout (contiguous chunks, zigzag), and prints per
configuration, from the per-rank traces of the last step:
  - step time, and its ratio to the one-rank step measured in the same run;
  - attention balance: the busiest rank's time in attention kernels (forward
    and backward) over the ranks' mean, next to the plan printer's
    prediction from FLOPs (busiest/mean attention FLOPs);
  - the bytes each rank sends per step (collectives and the ring's
    point-to-point blocks, from --braid-print-plan).

usage: python3 bench/context/attention_variants.py [--bin build/bin] [--cp 2]
       [--seq 2048] [--steps 3]
The measured figures mean what they say only with a core per rank (cp=2 on
a 2-core machine); with fewer cores than ranks the ranks share cores, and
the script says so next to the figures. A ring step's wait for its
neighbour's block falls outside the attention kernels' events (in the
dist.shift's call or its wait), so it shows in the step time only.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import machine  # noqa: E402

VARIANTS = [("allgather", "contiguous"), ("allgather", "zigzag"), ("ulysses", "contiguous"),
            ("ulysses", "zigzag"), ("ring", "contiguous"), ("ring", "zigzag")]


def from_traces(prefix, step):
    """(step span in ms, busiest/mean of per-rank attention time)."""
    attention, first, last = [], None, None
    for path in sorted(glob.glob(prefix + ".rank*.json")) or [prefix + ".json"]:
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        busy = 0.0
        for e in events:
            if e.get("ph") != "X" or e.get("args", {}).get("step") != step:
                continue
            first = e["ts"] if first is None else min(first, e["ts"])
            last = e["ts"] + e["dur"] if last is None else max(last, e["ts"] + e["dur"])
            # The attention kernels: whole-sequence ones, and the block ops
            # that --convert-braid-to-dist expands context parallelism into.
            if e["name"].startswith("attention"):
                busy += e["dur"]
        attention.append(busy)
    mean = sum(attention) / len(attention)
    return (last - first) / 1e3, max(attention) / mean


def plan(binary, model, cp, variant, layout):
    """(predicted busiest/mean attention FLOPs, bytes sent per rank per step).

    The FLOPs are counted on the partitioned program, whose attention ops
    still state their queries' and keys' rows; the bytes on the whole
    training step as it runs (every transfer a dist op)."""
    options = f"grid=cp={cp} cp-attention={variant} cp-layout={layout}"
    def printed(pipeline):
        return subprocess.run(
            [os.path.join(binary, "braid-opt"), model, pipeline, "--braid-print-plan",
             "-o", os.devnull], check=True, capture_output=True, text=True).stdout
    busiest = re.search(r"attention_flops busiest/mean: ([0-9.]+)",
                        printed(f"--braid-partition={options}"))
    sent = re.search(r"collective_bytes_per_step: ([0-9]+)",
                     printed(f"--braid-training-pipeline={options}"))
    return float(busiest.group(1)) if busiest else 1.0, int(sent.group(1)) if sent else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--cp", type=int, default=2)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="braid-cp-bench-")
    model = os.path.join(work, "model.mlir")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    with open(model, "w") as f:
        f.write(subprocess.run(
            [sys.executable, "-m", "braid.models", "llama-tiny", "--layers", "2", "--batch", "1",
             "--seq", str(args.seq)], check=True, capture_output=True, text=True,
            env=env).stdout)

    def run(flags, name):
        trace = os.path.join(work, name + ".json")
        subprocess.run([os.path.join(args.bin, "braid-run"), model, "--steps", str(args.steps),
                        "--trace", trace, "--quiet", *flags], check=True, capture_output=True)
        return from_traces(trace[:-5], args.steps)

    print(f"machine: {machine.describe()}")
    print(f"model: llama-tiny, 2 layers, batch 1, seq {args.seq}; cp={args.cp} CPU ranks; "
          f"last of {args.steps} steps")
    if (os.cpu_count() or 1) < args.cp:
        print(f"note: {os.cpu_count()} cores for {args.cp} ranks: ranks share cores, "
              "times stretch")
    base_ms, _ = run([], "one-rank")
    print(f"{'variant':<22}{'step ms':>9}{'vs 1 rank':>11}{'attn busiest/mean':>19}"
          f"{'predicted':>11}{'bytes sent/rank':>17}")
    print(f"{'1 rank':<22}{base_ms:>9.1f}{1.0:>11.2f}")
    for variant, layout in VARIANTS:
        try:
            ms, balance = run(["--grid", f"cp={args.cp}", "--cp-attention", variant,
                               "--cp-layout", layout], f"{variant}-{layout}")
        except subprocess.CalledProcessError as e:
            print(f"{variant + ' ' + layout:<22} failed: {e.stderr.decode()[-200:]}")
            continue
        predicted, sent = plan(args.bin, model, args.cp, variant, layout)
        print(f"{variant + ' ' + layout:<22}{ms:>9.1f}{base_ms / ms:>11.2f}{balance:>19.3f}"
              f"{predicted:>11.3f}{sent:>17}")
    print("vs 1 rank: the one-rank step time over this one (speed-up); "
          "predicted: busiest/mean attention FLOPs from --braid-print-plan")


if __name__ == "__main__":
    main()
