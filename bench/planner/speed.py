"""How fast braid-plan searches: plans evaluated per second on one core, and
the time to explore the whole space of large models on large clusters.

For each case braid-plan runs once (one thread) over every factorization of
the GPUs into pp, dp, ep, cp and tp with virtual stages, micro-batch, ZeRO
stage and recompute; printed are the plans whose step time it computed, the
groups it dropped by memory first, the wall time and the plans per second.
The issue's targets: at least 100,000 plans per second, and the space of
Llama 3 405B on 16,384 H100s in under 10 s.

usage: python3 bench/planner/speed.py [--bin build/bin] [--repeat 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import machine  # noqa: E402

LLAMA405 = ("family=llama,hidden=16384,layers=126,seq=8192,heads=128,kv_heads=8,ffn=53248,"
            "vocab=128256")
CASES = [
    ("Llama 3 405B, 16384 x H100, batch 2048", LLAMA405, 16384, "h100-sxm", 2048),
    ("Llama 3 405B, 8192 x H100, batch 2048", LLAMA405, 8192, "h100-sxm", 2048),
    ("GPT-3 175B, 1024 x A100, batch 1536",
     "family=gpt,hidden=12288,layers=96,seq=2048,heads=96,vocab=51200", 1024, "a100-sxm", 1536),
    ("Mixtral 8x7B, 512 x H100, batch 1024",
     "family=moe,hidden=4096,layers=32,seq=4096,heads=32,kv_heads=8,ffn=14336,vocab=32000,"
     "experts=8,top_k=2", 512, "h100-sxm", 1024),
    ("Jamba shape, 256 x H100, batch 512",
     "family=hybrid,hidden=4096,layers=32,seq=4096,heads=32,kv_heads=8,ffn=14336,vocab=65536,"
     "experts=16,top_k=2,attn_period=8,attn_offset=4,expert_period=2,expert_offset=1",
     256, "h100-sxm", 512),
    # A deep pipeline of many micro-batches: 356 = 4 x 89 GPUs leaves pp=89,
    # and the batch 28,533 micro-batches, so that re-timing the first plans
    # with the schedule simulator (millions of actions each) dominates.
    ("GPT-3 175B, 356 x H100, batch 28533",
     "family=gpt,hidden=12288,layers=96,seq=2048,heads=96,vocab=51200", 356, "h100-sxm", 28533),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"machine: {machine.describe()}")
    print(f"{'case':42s} {'plans':>9s} {'by memory':>9s} {'search s':>9s} {'wall s':>7s} "
          f"{'plans/s':>10s}  best plan")
    for name, model, gpus, hw, batch in CASES:
        runs = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            out = subprocess.run(
                ["taskset", "-c", "0", os.path.join(args.bin, "braid-plan"), "--model", model,
                 "--gpus", str(gpus), "--hardware", hw, "--global-batch", str(batch),
                 "--top", "1", "--format", "json"],
                check=True, capture_output=True, text=True).stdout
            wall = time.perf_counter() - start
            runs.append((json.loads(out), wall))
        result, wall = sorted(runs, key=lambda r: r[0]["search"]["seconds"])[len(runs) // 2]
        s = result["search"]
        best = result["plans"][0]
        print(f"{name:42s} {s['evaluated']:9d} {s['memory_checked']:9d} {s['seconds']:9.3f} "
              f"{wall:7.2f} {s['evaluated'] / s['seconds']:10.0f}  {best['grid']} v{best['vpp']} "
              f"b{best['micro_batch']} z{best['zero']} {best['recompute']} "
              f"MFU {100 * best['mfu']:.1f}%")


if __name__ == "__main__":
    main()
