"""Measured pipeline bubbles next to the predicted ones.

Runs one model on a 4-rank pipeline with 16 micro-batches under each schedule
(GPipe, 1F1B, interleaved 1F1B with 2 chunks per rank, ZB-H1) on CPU ranks,
reads every rank's trace of the last step and prints, per schedule:
  - measured: 1 - (sum over ranks of the time in pipeline actions) /
    (ranks x the step's span from the first action to the last);
  - simulated: braid-opt --braid-print-schedule's event simulation with the
    cost model's chunk times (backward = 2 x forward, half of it W);
  - textbook: (p-1)/(m+p-1), /(v m+p-1) interleaved, Qi et al. for ZB-H1;
and the step's time relative to GPipe's in the same run.

usage: python3 bench/pipeline/bubbles.py [--bin build/bin] [--layers 8]
       [--seq 64] [--steps 3]
The measured figure is only meaningful when every rank has a core: with
fewer cores than ranks, ranks computing at the same time share cores and
their actions stretch, which the script reports next to the figures.
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

PP, MICROBATCHES = 4, 16
SCHEDULES = [("gpipe", 1), ("1f1b", 1), ("interleaved", 2), ("zb-h1", 1)]


def measured_bubble(trace_prefix, step):
    busy, first, last = 0.0, None, None
    ranks = sorted(glob.glob(trace_prefix + ".rank*.json"))
    for path in ranks:
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        for e in events:
            if e.get("name") != "pipeline" or e.get("args", {}).get("step") != step:
                continue
            busy += e["dur"]
            first = e["ts"] if first is None else min(first, e["ts"])
            last = e["ts"] + e["dur"] if last is None else max(last, e["ts"] + e["dur"])
    span = last - first
    return 1.0 - busy / (len(ranks) * span), span / 1e3, len(ranks)


def predicted(braid_opt, model, schedule, virtual):
    out = subprocess.run(
        [braid_opt, model, "-o", "/dev/null",
         f"--braid-print-schedule=pp={PP} microbatches={MICROBATCHES} "
         f"schedule={schedule} virtual-stages={virtual}"],
        check=True, capture_output=True, text=True).stdout
    values = dict(re.findall(r"^(\w+): ([0-9.]+)$", out, re.M))
    return float(values["bubble_fraction"]), float(values["textbook_bubble_fraction"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="braid-bubbles-")
    model = os.path.join(work, "model.mlir")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    with open(model, "w") as f:
        f.write(subprocess.run(
            [sys.executable, "-m", "braid.models", "gpt-tiny", "--layers", str(args.layers),
             "--batch", str(MICROBATCHES), "--seq", str(args.seq)],
            check=True, capture_output=True, text=True, env=env).stdout)
    print(f"machine: {machine.describe()}")
    print(f"model: gpt-tiny, {args.layers} layers, batch {MICROBATCHES}, seq {args.seq}; "
          f"pp={PP}, {MICROBATCHES} micro-batches; last of {args.steps} steps")
    print(f"{'schedule':<16}{'measured':>9}{'simulated':>10}{'textbook':>9}{'step ms':>9}"
          f"{'vs gpipe':>9}")
    base = None
    for schedule, virtual in SCHEDULES:
        trace = os.path.join(work, f"{schedule}.json")
        subprocess.run(
            [os.path.join(args.bin, "braid-run"), model, "--grid", f"pp={PP}",
             "--microbatches", str(MICROBATCHES), "--schedule", schedule,
             "--virtual-stages", str(virtual), "--steps", str(args.steps),
             "--trace", trace, "--quiet"],
            check=True, capture_output=True, text=True)
        bubble, span_ms, ranks = measured_bubble(trace[:-5], args.steps)
        simulated, textbook = predicted(os.path.join(args.bin, "braid-opt"), model, schedule,
                                        virtual)
        base = base or span_ms
        label = schedule + (f" v={virtual}" if virtual > 1 else "")
        print(f"{label:<16}{bubble:>9.3f}{simulated:>10.3f}{textbook:>9.3f}{span_ms:>9.1f}"
              f"{span_ms / base:>9.2f}")
    if (os.cpu_count() or 1) < ranks:
        print(f"note: {ranks} ranks on {os.cpu_count()} cores: ranks computing at once share "
              "cores, so actions stretch and the measured bubble is not the schedule's alone")


if __name__ == "__main__":
    main()
