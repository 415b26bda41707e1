"""The serving cost model against published serving measurements.

For each row of bench/planner/published-serving.json (TensorRT-LLM's
published throughput at a fixed batch and its first-token latency at batch 1,
on A100 and H100; its in-flight-batching throughput on H100 and H200, dense
and MoE), runs `braid-plan --inference --evaluate` on the published layout,
precision, prompt and output lengths and batch, and prints the predicted
figure beside the published one with their ratio (model / published) and the
error. Then the published ratios between layouts (NVIDIA's Llama 3.1 405B on
an HGX H200: tensor parallelism 5.6x faster at minimum latency, pipeline
parallelism 1.5x the throughput at maximum) against the model's.

The compute calibrations are the training ones (lib/CostModel/calibration,
fitted to published training step times). One serving constant, decode's
fraction of HBM peak (kDecodeMemoryEfficiency in lib/Planner/InferenceCost.cpp),
is fitted to the two rows marked "role": "calibration" (shown with a C); the
summary lines judge the other 73 (validation) rows, and a last line all 75.

usage: python3 bench/planner/serving.py [--bin build/bin] [--rows PREFIX]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "bench", "planner", "published-serving.json")


def run(bin_dir, row, layout, batch, batching, objective="throughput", output=None):
    cmd = [os.path.join(bin_dir, "braid-plan"), "--inference", "--model", row["model_spec"],
           "--gpus", str(row["gpus"]), "--hardware", row["hardware"], "--prompt",
           str(row["prompt"]), "--output", str(output or row["output"]), "--dtype", row["dtype"],
           "--batching", batching, "--objective", objective, "--evaluate", layout,
           "--format", "json"]
    if batch:
        cmd += ["--batch", str(batch)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr.strip())
    return json.loads(out.stdout)["layouts"][0]


def predict(bin_dir, row):
    """The model's figure for the row's metric, and the batch it used."""
    if row["metric"] == "ttft_ms":
        r = run(bin_dir, row, row["layout"], 1, "static", output=1)
        return r["ttft_ms"], 1
    r = run(bin_dir, row, row["layout"], row["batch"], row["batching"])
    if row["metric"] == "output_tokens_per_s":
        return r["tokens_per_s_per_gpu"] * row["gpus"], r["batch"]
    return r["tokens_per_s_per_gpu"], r["batch"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--rows", default="", help="only the rows whose id starts so")
    args = parser.parse_args()
    data = json.load(open(DATA))
    print("groups: trt061 = TensorRT-LLM 0.6.1 at a fixed batch (static batching), trt05 = its "
          "first token at batch 1 (0.5), trtperf = its in-flight batching at the largest batch "
          "(perf-overview); model / published per row; C = a calibration row (the groups and "
          "'validation' leave them out)")
    print(f"{'row':48s} {'hw':8s} {'layout':10s} {'batch':>6s} {'metric':12s} "
          f"{'published':>10s} {'model':>10s} {'ratio':>6s} {'error':>7s}")
    errors, groups, calibration = [], {}, []
    for row in data["rows"]:
        if not row["id"].startswith(args.rows):
            continue
        value, batch = predict(args.bin, row)
        ratio = value / row["published"]
        error = 100 * (ratio - 1)
        role = "C" if row.get("role") == "calibration" else " "
        if role == "C":
            calibration.append(error)
        else:
            errors.append(error)
        family = "moe" if "experts=" in row["model_spec"] else "dense"
        group = f"{row['id'].split('-')[0]} {family} {row['metric']}"
        if role != "C":
            groups.setdefault(group, []).append(error)
        metric = {"output_tokens_per_s_per_gpu": "tok/s/GPU", "output_tokens_per_s": "tok/s",
                  "ttft_ms": "TTFT ms"}[row["metric"]]
        print(f"{role} {row['id']:46s} {row['hardware']:8s} {row['layout']:10s} {batch:6d} "
              f"{metric:12s} {row['published']:10.1f} {value:10.1f} {ratio:6.3f} {error:+6.1f}%")
    for group, errs in groups.items():
        print(f"group {group}: {len(errs)} rows, median |error| "
              f"{statistics.median(abs(e) for e in errs):.1f}%, max {max(abs(e) for e in errs):.1f}%")
    if errors:
        absolute = [abs(e) for e in errors]
        within = sum(a <= 25 for a in absolute)
        print(f"validation: {len(errors)} rows, median |error| "
              f"{statistics.median(absolute):.1f}%, max {max(absolute):.1f}%, "
              f"within 25%: {within}/{len(errors)}")
        absolute += [abs(e) for e in calibration]
        within = sum(a <= 25 for a in absolute)
        print(f"all: {len(absolute)} rows ({len(calibration)} calibration), median |error| "
              f"{statistics.median(absolute):.1f}%, max {max(absolute):.1f}%, "
              f"within 25%: {within}/{len(absolute)}")
    for r in data["ratios"]:
        a = run(args.bin, r, r["a"], 0, "continuous", r["objective"])
        b = run(args.bin, r, r["b"], 0, "continuous", r["objective"])
        ratio = a[r["metric"]] / b[r["metric"]]
        print(f"ratio {r['id']}: {r['meaning']}: model {ratio:.2f}, published "
              f"{r['published_ratio']:.2f} ({100 * (ratio / r['published_ratio'] - 1):+.1f}%)")


if __name__ == "__main__":
    sys.exit(main())
