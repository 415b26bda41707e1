"""Communication hidden by --braid-schedule-overlap on CPU ranks, measured
and predicted.

Runs one Llama-style model (llama-tiny scaled up until a step's compute and
its communication are comparable) on 4 CPU ranks under the link emulator
(BRAID_LINK, runtime/src/comm_mpi.h), on dp2 x tp2, pp2 x dp2 (1F1B, 4
micro-batches) and cp2 x dp2, each with the overlap scheduler off and on, and
prints per plan and setting (the scheduled run is scheduled for the emulated
links, BRAID_LINK, with its compute timed on the CPU description fitted to
the unscheduled run just before it: braid-run --schedule-hardware):
  - step: a step's time (the span of its events over every rank's trace),
    and its ratio off / on; every figure is the median over steps 2..N;
  - waits (measured): the time a rank's program stood in waits for
    transfers in a step (the traces' "wait" events), the mean over ranks;
    "on links" is the part of it before each transfer's emulated link was
    done (the rest is waiting for ranks of the group that came later, which
    ranks sharing cores do), and all of a receive's wait (per kind and
    group: bench/overlap/trace_exposure.py on a run's traces);
  - exposed (predicted): --braid-print-plan's simulation of the same program
    (a pipeline's waits for the neighbour's compute, its bubble, included)
    (braid-opt, same options) with the same links, compute on a description
    of these CPU ranks measured in the same run (the matrix products' FLOP
    rates per core's time, the memory bandwidth that makes the predicted
    compute of a step equal the measured: ranks sharing cores compute at
    speeds that vary from run to run, and the cores the ranks share,
    host_cores: a pipeline's stage computes faster while the other waits);
    "ranks computing alone" is that prediction with every rank computing at
    the rates measured on the clock through the whole step, for comparison;
  - hidden: what the schedule took off the exposed time, measured against
    predicted (the issue's target: at least 70% of what the model says can
    be hidden), and the prediction's error against the measurement.

usage: python3 bench/overlap/overlap.py [--bin build/bin] [--steps 7]
       [--plans dp2xtp2,pp2xdp2,cp2xdp2] [--bucket-mb MiB] [--repeat 5]
--repeat runs each plan's pair of settings that many times, each with its own
fitted CPU description, and prints the medians (the prediction's errors with
their range over the repeats).
--bucket-mb sets the scheduler's gradient buckets (braid-run --bucket-mb,
the first bucket 1/25 of it as DDP's 1 of 25 MiB). The default, 0.05 MiB,
scales DDP's 25 MiB as the links are scaled: they are 500 times slower than
a cluster's (50 MB/s for a 25 GB/s port) at a cluster's latencies, so a
bucket's transfer stays as long next to a link's latency as it is there; at
the scheduler's own 25 MiB this model's 13.6 MB of gradients would be one
bucket that starts when the backward ends, and nothing would be left to
hide. 0 reduces each gradient alone.
Ranks share cores when the machine has fewer than 4: a rank that waits then
lends its core to one that computes, which the figures include.
"""
import argparse
import bisect
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402
import trace_exposure  # noqa: E402

# The model: llama-tiny at a width where a step computes for 130-170 ms on
# two cores (the CPU kernels of today: products through OpenBLAS), and the
# links below, so that a step's compute is 0.4 to 1 times its transfers.
MODEL = ["llama-tiny", "--layers", "4", "--hidden", "256", "--heads", "8", "--kv-heads", "4",
         "--ffn", "768", "--vocab", "512", "--seq", "64", "--batch", "16"]
# Links slow enough that communication is comparable to the compute.
LINKS = {"tp": "20us,200MB/s", "cp": "20us,200MB/s", "pp": "50us,100MB/s", "dp": "50us,50MB/s"}
PLANS = {
    "dp2xtp2": ["--grid", "dp=2,tp=2"],
    "pp2xdp2": ["--grid", "pp=2,dp=2", "--microbatches", "4", "--schedule", "1f1b"],
    "cp2xdp2": ["--grid", "dp=2,cp=2"],
    # Two ranks, one core each (--plans dp2,tp2,pp2,cp2): no rank lends its
    # core to another, so what the ranks wait for is the links and the
    # schedule alone.
    "dp2": ["--grid", "dp=2"],
    "tp2": ["--grid", "tp=2"],
    "pp2": ["--grid", "pp=2", "--microbatches", "4", "--schedule", "1f1b"],
    "cp2": ["--grid", "cp=2"],
}


def links(plan):
    """BRAID_LINK for the plan's axes (the runtime rejects axes not in the grid)."""
    grid = PLANS[plan][PLANS[plan].index("--grid") + 1]
    return ";".join(f"{axis}:{LINKS[axis]}" for axis in re.findall(r"(\w+)=", grid))


def pipeline_options(args):
    """braid-run's flags as --braid-training-pipeline options."""
    names = {"--grid": "grid", "--microbatches": "microbatches", "--schedule": "schedule"}
    return " ".join(f"{names[args[i]]}={args[i + 1]}" for i in range(0, len(args), 2))


def compute_spans(r):
    """A rank's spans of compute in its events: its top-level kernels (a
    kernel inside another, a pipeline action's, counts once) without the
    waits inside them. Returns (spans sorted, busy us, wait us inside)."""
    top = sorted((e for e in r if e["cat"] == "kernel"), key=lambda e: (e["ts"], -e["dur"]))
    last_end, outer = -1.0, []
    for e in top:
        if e["ts"] >= last_end:
            last_end = e["ts"] + e["dur"]
            outer.append(e)
    spans, waits_inside = [], 0.0
    waits = sorted((w for w in r if w["cat"] == "wait"), key=lambda w: w["ts"])
    for k in outer:
        begin, end = k["ts"], k["ts"] + k["dur"]
        for w in waits:
            if begin <= w["ts"] and w["ts"] + w["dur"] <= end:
                waits_inside += w["dur"]
                spans.append((begin, w["ts"]))
                begin = w["ts"] + w["dur"]
        spans.append((begin, end))
    return [sp for sp in spans if sp[1] > sp[0]], sum(k["dur"] for k in outer), waits_inside


def union(spans):
    """Sorted spans merged where they overlap."""
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def core_shares(spans_by_rank, cores, programs):
    """The share of a core a computing rank had over time as the
    simulation of a description with host_cores gives it: the ranks share
    `cores`, and a program's ranks (`programs` of them, in rank order: a
    pipeline's stages, else one) compute together, so a rank computes at
    min(1, cores / (ranks per program x programs computing)). Sorted
    segments (begin, end, share) of the time any rank computed."""
    per = len(spans_by_rank) // programs
    stages = [union([sp for spans in spans_by_rank[k * per:(k + 1) * per] for sp in spans])
              for k in range(programs)]
    edges = sorted([(a, 1) for spans in stages for a, _ in spans] +
                   [(b, -1) for spans in stages for _, b in spans])
    segments, n, last = [], 0, None
    for t, d in edges:
        if n > 0 and last is not None and t > last:
            segments.append((last, t, min(1.0, cores / (n * per))))
        n += d
        last = t
    return segments


def core_seconds(segments, starts, begin, end):
    """The core time of a rank computing from `begin` to `end` (us), on the
    segments of core_shares (`starts`: their beginnings)."""
    i = max(0, bisect.bisect_right(starts, begin) - 1)
    total = 0.0
    while i < len(segments) and segments[i][0] < end:
        a, b, share = segments[i]
        total += max(0.0, min(b, end) - max(a, begin)) * share
        i += 1
    return total


def step_metrics(traces, step, programs=1):
    """One step's figures from every rank's events (microseconds in, ms out)."""
    ranks, on_links = [], []
    for everything in traces:
        on_links.append(sum(linked for _, _, linked in trace_exposure.waits(everything, step)))
        ranks.append([e for e in everything if e["args"].get("step") == step])
    begin = min(e["ts"] for r in ranks for e in r)
    end = max(e["ts"] + e["dur"] for r in ranks for e in r)
    exposed = [sum(e["dur"] for e in r if e["cat"] == "wait") for r in ranks]
    # Kernel time outside waits.
    spans, compute = [], []
    for r in ranks:
        s, busy, waits_inside = compute_spans(r)
        spans.append(s)
        compute.append(busy - waits_inside)
    # Ranks sharing cores: each product's time on a core, which is what a
    # description with host_cores times it at (a product that ran while
    # both stages of a pipeline of four ranks on two cores computed had half
    # of one; while the other stage waited, all of one).
    segments = core_shares(spans, CORES, programs)
    starts = [a for a, _, _ in segments]
    flops = sum(e["args"].get("flops", 0) for r in ranks for e in r if e["cat"] == "kernel")
    matmul_us = sum(e["dur"] for r in ranks for e in r
                    if e["cat"] == "kernel" and "flops" in e["args"])
    # Each kind of product's own rate: on these CPUs a layer's products
    # (linear), its weight gradients (batch_matmul) and attention's run at
    # rates that differ by up to 3x, which one rate would spread over the
    # step wrongly (the backward's share, behind which gradients reduce).
    by_kind, core_us = {}, 0.0
    for r in ranks:
        for e in r:
            if e["cat"] == "kernel" and e["args"].get("flops"):
                f, us, on_core = by_kind.get(e["name"], (0.0, 0.0, 0.0))
                c = core_seconds(segments, starts, e["ts"], e["ts"] + e["dur"])
                by_kind[e["name"]] = (f + e["args"]["flops"], us + e["dur"], on_core + c)
                core_us += c
    mean = lambda xs: sum(xs) / len(xs) / 1e3  # noqa: E731
    return {"step_ms": (end - begin) / 1e3, "exposed_ms": mean(exposed),
            "links_ms": mean(on_links), "compute_ms": mean(compute),
            "flops_per_s": flops / (matmul_us / 1e6) if matmul_us else 0.0,
            "core_flops_per_s": flops / (core_us / 1e6) if core_us else 0.0,
            "op_flops_per_s": {k: f / (us / 1e6) for k, (f, us, _) in by_kind.items() if us > 0},
            "core_op_flops_per_s": {k: f / (c / 1e6) for k, (f, _, c) in by_kind.items()
                                    if c > 0}}


# Extra braid-run flags for every run and the options they are in the
# pipeline (set from the command line).
EXTRA_RUN, EXTRA_OPTIONS = [], ""


def run(bin_dir, model, plan, overlap, steps, work, schedule_hardware="h100-sxm"):
    """The run's figures: per figure, the median over steps 2..steps (step 1
    warms up). braid-run schedules the program for BRAID_LINK's links, its
    compute timed on `schedule_hardware`."""
    trace = os.path.join(work, f"{plan}-{'on' if overlap else 'off'}", "trace.json")
    os.makedirs(os.path.dirname(trace), exist_ok=True)
    env = dict(os.environ, BRAID_LINK=links(plan))
    subprocess.run([os.path.join(bin_dir, "braid-run"), model, *PLANS[plan], "--steps", str(steps),
                    "--seed", "1", "--quiet", "--trace", trace,
                    f"--schedule-overlap={'true' if overlap else 'false'}",
                    "--schedule-hardware", schedule_hardware, *EXTRA_RUN],
                   check=True, capture_output=True, text=True, env=env)
    traces = trace_exposure.load(trace)
    # A pipeline's stages are its programs: pp first in the grid, so that
    # stage k's ranks are the k-th block of them.
    grid = PLANS[plan][PLANS[plan].index("--grid") + 1]
    assert "pp=" not in grid or grid.startswith("pp="), grid
    stages = int(re.search(r"pp=(\d+)", grid).group(1)) if "pp=" in grid else 1
    per_step = [step_metrics(traces, k, stages) for k in range(2, steps + 1)]
    rates = ("op_flops_per_s", "core_op_flops_per_s")
    out = {key: statistics.median(m[key] for m in per_step)
           for key in per_step[0] if key not in rates}
    for rate in rates:
        kinds = set().union(*(m[rate] for m in per_step))
        out[rate] = {k: statistics.median(m[rate][k] for m in per_step if k in m[rate])
                     for k in kinds}
    return out


# The cores the ranks share.
CORES = len(os.sched_getaffinity(0))


def cpu_description(path, flops_per_s, bytes_per_s, op_flops_per_s=None, host_cores=None):
    with open(path, "w") as f:
        extra = {"host_cores": host_cores} if host_cores else {}
        json.dump({"name": "cpu-ranks", "description": "these CPU ranks, as measured",
                   **extra,
                   "devices_per_node": 1, "memory_bytes": 1e12, "peak_bf16_flops": flops_per_s,
                   "op_flops_per_s": op_flops_per_s or {},
                   "hbm_bytes_per_s": bytes_per_s, "collective_latency_s": 0,
                   "intra_node": {"kind": "emulated", "bytes_per_s": 1e9, "step_latency_s": 0},
                   "inter_node": {"kind": "emulated", "bytes_per_s": 1e9, "step_latency_s": 0},
                   "sources": ["bench/overlap/overlap.py"]}, f)


def predict(bin_dir, model, plan, overlap, hardware, schedule_hardware="h100-sxm"):
    """--braid-print-plan's figures for the program braid-run compiled (the
    same options, the scheduler's links and hardware too), timed on
    `hardware`."""
    out = subprocess.run(
        [os.path.join(bin_dir, "braid-opt"), model, "-o", "/dev/null",
         f"--braid-training-pipeline={pipeline_options(PLANS[plan])} "
         f"schedule-overlap={'true' if overlap else 'false'}{EXTRA_OPTIONS} "
         f"schedule-link={links(plan)} schedule-hardware={schedule_hardware}",
         f"--braid-print-plan=hardware={hardware} link={links(plan)}"],
        check=True, capture_output=True, text=True).stdout
    found = re.findall(r"exposed_time_per_step: ([0-9.]+) us of ([0-9.]+) us of transfers, "
                       r"step ([0-9.]+) us \(compute ([0-9.]+) us", out)
    if not found:
        sys.exit(f"no exposed_time_per_step for {plan}:\n{out}")
    # Per stage for a pipeline: the mean over stages (each is half the ranks);
    # a stage's waits for its neighbour's compute (the bubble) are waits too.
    bubbles = [float(b) for b in re.findall(r"bubble_time_per_step: ([0-9.]+) us", out)]
    rows = [[float(x) for x in row] for row in found]
    for row, bubble in zip(rows, bubbles):
        row[0] += bubble
    cols = list(zip(*rows))
    mean = [sum(c) / len(c) / 1e3 for c in cols]
    return {"exposed_ms": mean[0], "transfers_ms": mean[1], "step_ms": max(cols[2]) / 1e3,
            "compute_ms": mean[3]}


def calibrate(bin_dir, model, plan, overlap, measured, work, schedule_hardware="h100-sxm",
              shared=True):
    """The CPU description whose predicted compute matches the measured one
    (bisection on the bandwidth, the FLOP rates measured). `shared`: the
    ranks share this machine's cores (host_cores), the products' rates are
    per core's time; else every rank computes alone at the rates measured
    on the clock, the same through the step."""
    hardware = os.path.join(work, f"cpu-{plan}-{'on' if overlap else 'off'}"
                                  f"{'-shared' if shared else ''}.json")
    flops = measured["core_flops_per_s" if shared else "flops_per_s"]
    rates = measured["core_op_flops_per_s" if shared else "op_flops_per_s"]
    cores = CORES if shared else None
    lo, hi = 1e8, 1e12
    for _ in range(14):
        mid = (lo * hi) ** 0.5
        cpu_description(hardware, flops, mid, rates, cores)
        got = predict(bin_dir, model, plan, overlap, hardware, schedule_hardware)["compute_ms"]
        if got > measured["compute_ms"]:
            lo = mid
        else:
            hi = mid
    cpu_description(hardware, flops, (lo * hi) ** 0.5, rates, cores)
    return hardware, (lo * hi) ** 0.5


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--steps", type=int, default=7)
    p.add_argument("--plans", default="dp2xtp2,pp2xdp2,cp2xdp2")
    p.add_argument("--bucket-mb", type=float, default=0.05)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    global EXTRA_OPTIONS
    # The first bucket keeps DDP's proportion (1 of 25 MiB).
    first = args.bucket_mb / 25
    EXTRA_RUN.extend(["--bucket-mb", str(args.bucket_mb), "--first-bucket-mb", str(first)])
    EXTRA_OPTIONS = f" bucket-mb={args.bucket_mb} first-bucket-mb={first}"
    work = tempfile.mkdtemp(prefix="braid-overlap-")
    model = os.path.join(work, "model.mlir")
    subprocess.run([sys.executable, "-m", "braid.models", *MODEL, "-o", model], check=True,
                   cwd=os.path.join(ROOT, "python"))
    print(f"machine: {machine.describe()}")
    print(f"model: {' '.join(MODEL)}; links {LINKS}; medians of steps 2..{args.steps}; "
          f"buckets {args.bucket_mb} MiB after a first of {first} MiB; "
          f"medians of {args.repeat} repeats")
    print(f"{'plan':8} {'overlap':7} {'step ms':>8} {'waits ms':>8} {'on links':>8} "
          f"{'predicted':>9} {'transfers':>9} {'compute':>8}")
    for plan in args.plans.split(","):
        # Each repeat measures both settings, fits its own CPU description
        # (ranks sharing cores compute at speeds that differ from run to run
        # by more than the schedule changes the compute) and predicts; the
        # figures are the medians over the repeats.
        repeats = []
        # The scheduled run's compute is timed, for its list scheduler, on the
        # description fitted to the unscheduled run just before it.
        # The prediction runs the ranks on this machine's cores, which they
        # share (a description with host_cores); `alone` is the same
        # prediction with every rank computing alone at the rates measured
        # on the clock, the same through the step (what it was before the
        # simulator shared cores), for comparison. The scheduler, which
        # times one rank's ops, gets those rates.
        for _ in range(args.repeat):
            measured, fitted, predicted, alone = {}, {}, {}, {}
            schedule_hw = os.path.join(work, f"schedule-{plan}.json")
            for o in (False, True):
                on_hw = schedule_hw if o else "h100-sxm"
                measured[o] = run(args.bin, model, plan, o, args.steps, work, on_hw)
                fitted[o] = calibrate(args.bin, model, plan, o, measured[o], work, on_hw)
                predicted[o] = predict(args.bin, model, plan, o, fitted[o][0], on_hw)
                alone_hw, _ = calibrate(args.bin, model, plan, o, measured[o], work, on_hw,
                                        shared=False)
                alone[o] = predict(args.bin, model, plan, o, alone_hw, on_hw)
                if not o:
                    # The scheduler's description: the unscheduled run's, alone.
                    shutil.copyfile(alone_hw, schedule_hw)
            repeats.append((measured, predicted, fitted, alone))

        def med(figure):
            return statistics.median(figure(*r) for r in repeats)

        for o in (False, True):
            print(f"{plan:8} {'on' if o else 'off':7} "
                  f"{med(lambda m, q, f, a: m[o]['step_ms']):8.1f} "
                  f"{med(lambda m, q, f, a: m[o]['exposed_ms']):8.1f} "
                  f"{med(lambda m, q, f, a: m[o]['links_ms']):8.1f} "
                  f"{med(lambda m, q, f, a: q[o]['exposed_ms']):9.1f} "
                  f"{med(lambda m, q, f, a: q[o]['transfers_ms']):9.1f} "
                  f"{med(lambda m, q, f, a: m[o]['compute_ms']):8.1f}")

        def error(m, q, o):
            return ((q[o]["exposed_ms"] - m[o]["links_ms"]) / m[o]["links_ms"]
                    if m[o]["links_ms"] > 0 else float("nan"))

        hidden_m = med(lambda m, q, f, a: m[False]["links_ms"] - m[True]["links_ms"])
        hidden_p = med(lambda m, q, f, a: q[False]["exposed_ms"] - q[True]["exposed_ms"])
        hidden_a = med(lambda m, q, f, a: a[False]["exposed_ms"] - a[True]["exposed_ms"])
        errors = {o: sorted(error(m, q, o) for m, q, f, a in repeats) for o in (False, True)}
        errors_a = {o: statistics.median(error(m, a, o) for m, q, f, a in repeats)
                    for o in (False, True)}
        span = {o: f" ({100 * errors[o][0]:+.0f}..{100 * errors[o][-1]:+.0f}%)"
                if len(repeats) > 1 else "" for o in (False, True)}
        print(f"{plan:8} step off/on "
              f"{med(lambda m, q, f, a: m[False]['step_ms'] / m[True]['step_ms']):.2f}x; "
              f"hidden on the links {hidden_m:.1f} ms measured, {hidden_p:.1f} ms predicted "
              f"({100 * hidden_m / hidden_p if hidden_p > 0 else float('nan'):.0f}%); "
              f"prediction error off {100 * statistics.median(errors[False]):+.0f}%{span[False]}, "
              f"on {100 * statistics.median(errors[True]):+.0f}%{span[True]}; "
              f"ranks computing alone: {hidden_a:.1f} ms predicted "
              f"({100 * hidden_m / hidden_a if hidden_a > 0 else float('nan'):.0f}%), "
              f"error off {100 * errors_a[False]:+.0f}%, on {100 * errors_a[True]:+.0f}% "
              f"(CPU off/on: {med(lambda m, q, f, a: m[False]['flops_per_s']) / 1e9:.2f}/"
              f"{med(lambda m, q, f, a: m[True]['flops_per_s']) / 1e9:.2f} GFLOP/s in products "
              f"on the clock, {med(lambda m, q, f, a: m[False]['core_flops_per_s']) / 1e9:.2f}/"
              f"{med(lambda m, q, f, a: m[True]['core_flops_per_s']) / 1e9:.2f} per core's time, "
              f"{med(lambda m, q, f, a: f[False][1]) / 1e9:.2f}/"
              f"{med(lambda m, q, f, a: f[True][1]) / 1e9:.2f} GB/s fitted)")

if __name__ == "__main__":
    main()
