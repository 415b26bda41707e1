#!/usr/bin/env python3
"""Per-kernel time and GEMM throughput from a braid-run --trace JSON.

usage: trace_summary.py TRACE.json [--top N] [--model NAME]

Accepts Chrome trace format ({"traceEvents": [...]} or a bare list) with
complete events ("ph": "X", "ts", "dur" in microseconds). The op name is
args.op when present, else the event name; the label args.label.

GEMM throughput needs FLOPs per event: args.flops (proposed: the runtime
writes 2*m*n*k for linear / batch_matmul, 2*B*H*S*Skv*(D+Dv) (halved when
causal) for attention). Without it, TFLOP/s is reported as n/a.
"""
import argparse
import collections
import json
import sys

GEMM_OPS = {"linear", "batch_matmul", "expert_ffn", "matmul", "gemm"}


def load_events(path):
    with open(path) as f:
        data = json.load(f)
    events = data.get("traceEvents", data.get("events", [])) if isinstance(data, dict) else data
    out = []
    for e in events:
        if not isinstance(e, dict) or "dur" not in e:
            continue
        if e.get("ph", "X") != "X":
            continue
        args = e.get("args") or {}
        op = args.get("op") or e.get("name", "?")
        out.append((str(op), str(args.get("label", "")), float(e["dur"]), args))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--model", default="")
    args = ap.parse_args()
    try:
        events = load_events(args.trace)
    except (OSError, ValueError) as e:
        print(f"  trace unreadable: {e}")
        return 1
    if not events:
        print("  trace has no timed events")
        return 1
    total = sum(d for _, _, d, _ in events)
    by_op = collections.defaultdict(lambda: [0.0, 0, 0.0, 0.0])  # us, count, flops, us_with_flops
    for op, _, dur, a in events:
        r = by_op[op]
        r[0] += dur
        r[1] += 1
        fl = a.get("flops")
        if isinstance(fl, (int, float)) and fl > 0:
            r[2] += float(fl)
            r[3] += dur
    print(f"  {args.model} kernel time {total / 1e3:.3f} ms over {len(events)} events; "
          f"top {args.top} ops by total time:")
    print(f"    {'op':<16}{'calls':>7}{'total ms':>11}{'share':>8}{'avg us':>10}{'TFLOP/s':>10}")
    for op, (us, n, fl, flus) in sorted(by_op.items(), key=lambda kv: -kv[1][0])[:args.top]:
        tf = f"{fl / (flus * 1e-6) / 1e12:.1f}" if flus > 0 else ("n/a" if op in GEMM_OPS else "")
        print(f"    {op:<16}{n:>7}{us / 1e3:>11.3f}{100 * us / total:>7.1f}%{us / n:>10.1f}{tf:>10}")
    gemm_fl = sum(r[2] for op, r in by_op.items() if op in GEMM_OPS)
    gemm_us = sum(r[3] for op, r in by_op.items() if op in GEMM_OPS)
    if gemm_us > 0:
        print(f"    GEMMs overall: {gemm_fl / 1e12:.3f} TFLOP in {gemm_us / 1e3:.3f} ms = "
              f"{gemm_fl / (gemm_us * 1e-6) / 1e12:.1f} TFLOP/s")
        slow = sorted(((fl / (d * 1e-6) / 1e12, op, lab, d) for op, lab, d, a in events
                       if op in GEMM_OPS and isinstance((fl := a.get("flops")), (int, float))
                       and fl > 0 and d > 0))
        for tf, op, lab, d in slow[:3]:
            print(f"    slowest GEMM: {op} {lab} {d:.1f} us {tf:.1f} TFLOP/s")
    else:
        print("    GEMM TFLOP/s: n/a (trace events carry no args.flops)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
