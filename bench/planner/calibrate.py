"""Fits a compute calibration (lib/CostModel/calibration) to a run of the
kernel microbenchmark on the machine it ran on.

runtime/tools/kernel-rates (CPU ranks, f32) or kernel-rates-cuda (a GPU,
bf16) runs the runtime's own kernels over a sweep of shapes, one traced op
each; this script reads the trace (--trace of that run; the medians over its
steps after the first) and fits what the planner, the overlap scheduler and
--braid-print-plan charge (lib/CostModel/ComputeCost.h):
  - products: t = max(2mnk / (peak e q(m) q(n) q(k)), bytes / bandwidth) +
    launch, q(x) = x / (x + h): e, h and the launch by least squares on
    log t (a grid over h and the launch, e in closed form);
  - flash attention: its products over the causal half at a fraction of
    the peak, forward and backward (the backward as the planner counts it,
    2.5 times the forward's products);
  - memory-bound kernels (add, silu): their bytes over the bandwidth;
  - the selective scan: its arithmetic at a fraction of the peak.
On a GPU (--hardware h100-sxm or a description file) the peak and the
bandwidth are the description's and the fractions are fitted; on CPU ranks
(--cpu NAME) the fitted product rate is the peak and the measured bandwidth
the bandwidth, so the fractions of products and memory are 1, and a hardware
description of these ranks is written too (--hardware-out).

usage: python3 bench/planner/calibrate.py TRACE.json (--hardware H | --cpu NAME)
           -o CALIBRATION.json [--hardware-out HARDWARE.json] [--machine TEXT]
"""
import argparse
import datetime
import json
import math
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import machine  # noqa: E402


def kernels(trace_path):
    """(name, {shape key: int}, flops) -> median seconds, over steps > 1."""
    events = json.load(open(trace_path))
    events = events["traceEvents"] if isinstance(events, dict) else events
    events = [e for e in events if e.get("cat") == "kernel"]
    steps = sorted({e["args"].get("step", 1) for e in events})
    keep = [s for s in steps if s > 1] or steps
    times = {}
    for e in events:
        if e["args"].get("step", 1) not in keep:
            continue
        key = (e["name"], e["args"]["label"], e["args"].get("flops", 0.0))
        times.setdefault(key, []).append(e["dur"] * 1e-6)
    out = []
    for (name, label, flops), ts in sorted(times.items()):
        shape = {k: v for k, v in re.findall(r"(\w+)=(\w+)", label)}
        out.append({"name": name, "shape": shape, "flops": flops,
                    "seconds": statistics.median(ts)})
    return out


def element_bytes(k):
    return {"f32": 4, "bf16": 2, "f16": 2}[k["shape"].get("dtype", "f32")]


def fit_gemm(products, bandwidth, peak=None):
    """(rate, half_dim, launch, rms log error) of the products; the rate at
    most `peak` when one is given (a GPU's datasheet peak: a fit above it
    would be clipped after the search, leaving a half dimension chosen for
    a rate the calibration cannot hold)."""
    dims = [(int(k["shape"]["m"]), int(k["shape"]["n"]), int(k["shape"]["k"])) for k in products]
    ts = [k["seconds"] for k in products]
    flops = [2.0 * m * n * kk for m, n, kk in dims]
    floor = [element_bytes(k) * (m * kk + kk * n + m * n) / bandwidth
             for k, (m, n, kk) in zip(products, dims)]
    def error(h, launch):
        """(rate, rms log error) with half dimension h and this launch."""
        q = [(m / (m + h)) * (n / (n + h)) * (kk / (kk + h)) for m, n, kk in dims]
        if launch >= min(ts):
            return None, float("inf")
        # The rate from the products the compute bounds (a memory-bound
        # one's time says nothing of it), found again as the rate moves.
        bound = list(range(len(ts)))
        for _ in range(4):
            rate = math.exp(statistics.mean(math.log(flops[i] / (q[i] * (ts[i] - launch)))
                                            for i in bound))
            if peak:
                rate = min(rate, peak)
            bound = [i for i in range(len(ts)) if flops[i] / (rate * q[i]) >= floor[i]] or bound
        err = [math.log(max(f / (rate * qi), fl) + launch) - math.log(t)
               for f, qi, fl, t in zip(flops, q, floor, ts)]
        return rate, math.sqrt(statistics.mean(e * e for e in err))

    best = None
    for h in [0.0] + [2 ** (x / 4) for x in range(0, 49)]:  # 1 .. 4096
        # The launch: a coarse grid below the shortest product, then a
        # ternary search around the best of it.
        grid = [min(ts) * x / 20 for x in range(20)]
        i = min(range(len(grid)), key=lambda j: error(h, grid[j])[1])
        lo, hi = grid[max(i - 1, 0)], min(ts) * min(i + 1, 19.999) / 20
        for _ in range(40):
            a, b = lo + (hi - lo) / 3, hi - (hi - lo) / 3
            if error(h, a)[1] <= error(h, b)[1]:
                hi = b
            else:
                lo = a
        launch = (lo + hi) / 2
        rate, rms = error(h, launch)
        if best is None or rms < best[3]:
            best = (rate, h, launch, rms)
    return best


def fit(kernel_list, peak=None, bandwidth=None):
    """The calibration's fractions (and, without a peak, the rates that are
    its peak and bandwidth) from the kernels' medians."""
    by = lambda name: [k for k in kernel_list if k["name"] == name]  # noqa: E731
    streams = by("add") + by("silu")
    moved = [element_bytes(k) * int(k["shape"]["n"]) * (3 if k["name"] == "add" else 2) / k["seconds"]
             for k in streams]
    measured_bandwidth = statistics.median(moved)
    # The products' memory floor: the bandwidth memory-bound kernels reach.
    rate, half, launch, rms = fit_gemm(by("linear"), measured_bandwidth, peak)
    peak = peak or rate
    bandwidth = bandwidth or measured_bandwidth
    flash_f = statistics.median(k["flops"] / (k["seconds"] - launch) / peak for k in by("attention"))
    # The backward as the planner counts it: 2.5 times the forward's products
    # (the trace's FLOPs are the four products, twice the forward's).
    flash_b = statistics.median(1.25 * k["flops"] / (k["seconds"] - launch) / peak
                                for k in by("attention_grad"))
    scan = statistics.median(k["flops"] / (k["seconds"] - launch) / peak
                             for k in by("selective_scan"))
    return {"gemm_efficiency": min(1.0, rate / peak), "gemm_half_dim": half,
            "flash_forward_efficiency": min(1.0, flash_f),
            "flash_backward_efficiency": min(1.0, flash_b),
            "memory_efficiency": min(1.0, measured_bandwidth / bandwidth),
            "scan_efficiency": min(1.0, scan),
            "_peak": peak, "_bandwidth": bandwidth, "_launch": launch, "_gemm_rms_log": rms,
            "_kernels": len(kernel_list)}


def load_hardware(name):
    path = name if name.endswith(".json") else os.path.join(
        ROOT, "lib", "CostModel", "hardware", name + ".json")
    return json.load(open(path))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--hardware", help="the GPU's description: a name or a .json")
    group.add_argument("--cpu", help="the name of these CPU ranks' description")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--hardware-out", help="with --cpu: where to write their description")
    ap.add_argument("--machine", help="what ran the trace, for the sources (default: this "
                    "machine's processor; a GPU's run names the GPU)")
    args = ap.parse_args()
    ks = kernels(args.trace)
    names = {k["name"] for k in ks}
    missing = {"linear", "attention", "attention_grad", "add", "silu", "selective_scan"} - names
    if missing:
        sys.exit(f"calibrate.py: {args.trace} lacks kernels {sorted(missing)}: is it a trace "
                 f"of kernel-rates?")
    when = datetime.date.today().isoformat()
    source = (f"measured by runtime/tools/kernel-rates ({len(ks)} kernels, trace {os.path.basename(args.trace)}) "
              f"on {args.machine or machine.describe()}, fitted by bench/planner/calibrate.py "
              f"on {when}")
    if args.hardware:
        hw = load_hardware(args.hardware)
        f = fit(ks, hw["peak_bf16_flops"], hw["hbm_bytes_per_s"])
        name = hw["name"]
        reserved = 3 * 2 ** 30  # the CUDA context, NCCL's buffers, the allocator's slack
    else:
        f = fit(ks)
        name = args.cpu
        reserved = 0
    calibration = {"hardware": name}
    for key in ("gemm_efficiency", "gemm_half_dim", "flash_forward_efficiency",
                "flash_backward_efficiency", "memory_efficiency", "scan_efficiency"):
        calibration[key] = float(f"{f[key]:.4g}")
    calibration["reserved_bytes"] = reserved
    calibration["sources"] = [
        source,
        f"products: rate {f['_peak'] * calibration['gemm_efficiency'] / 1e12:.4g} TFLOP/s, half "
        f"dimension {f['gemm_half_dim']:.4g}, launch {f['_launch'] * 1e6:.3g} us, "
        f"rms error of log time {f['_gemm_rms_log']:.3f}",
        "reserved_bytes is assumed, not measured"]
    with open(args.output, "w") as out:
        json.dump(calibration, out, indent=2)
        out.write("\n")
    if args.cpu and args.hardware_out:
        description = {
            "name": name, "description": "CPU ranks, as kernel-rates measured them",
            "devices_per_node": 1, "memory_bytes": os.sysconf("SC_PAGE_SIZE") *
            os.sysconf("SC_PHYS_PAGES"), "peak_bf16_flops": f["_peak"],
            "hbm_bytes_per_s": f["_bandwidth"], "collective_latency_s": 0,
            "kernel_launch_s": f["_launch"],
            "intra_node": {"kind": "emulated", "bytes_per_s": 1e9, "step_latency_s": 0},
            "inter_node": {"kind": "emulated", "bytes_per_s": 1e9, "step_latency_s": 0},
            "sources": [source, "the links are placeholders: CPU ranks take theirs from "
                                "BRAID_LINK (link= of the passes)"]}
        with open(args.hardware_out, "w") as out:
            json.dump(description, out, indent=2)
            out.write("\n")
    print(f"{name}: " + ", ".join(f"{k} {calibration[k]}" for k in calibration
                                  if k not in ("hardware", "sources", "reserved_bytes")))
    print(f"  peak {f['_peak'] / 1e9:.3g} GFLOP/s, bandwidth {f['_bandwidth'] / 1e9:.3g} GB/s, "
          f"launch {f['_launch'] * 1e6:.3g} us, products' rms log error {f['_gemm_rms_log']:.3f}, "
          f"{f['_kernels']} kernels")


if __name__ == "__main__":
    main()
