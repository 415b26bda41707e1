#!/usr/bin/env python3
"""Serving on one CPU rank: continuous batching against static batching of the
same requests, and chunked prefill on against off, with `braid-run MODEL
--serve REQUESTS` (docs/serving.md) on a small Llama built from the presets,
in one run on one machine:

  PYTHONPATH=python python3 bench/serving/run.py [--quick] [--threads T]

The script writes the requests (JSON lines, seeded): Poisson arrivals at a
rate R, prompts and outputs of mixed lengths (`--rate` draws one output
length, so the file carries them), the same requests at every rate (the
arrival gaps are drawn once at rate 1 and divided by R). Every run prints
the summary line's figures: requests/s (served over the run's time),
output tokens/s, time to first token (TTFT) and time per output token (TPOT,
a request's mean after its first token) median/p90/p99, and the requests/s
served over the rate offered (1: the run kept up with the arrivals).

  a. Continuous against static batching (`--static-batching`: waves of
     --batch requests that start when the last wave has ended), each with
     its better prefill batch: continuous 1 prompt chunk per iteration,
     static the whole wave (--prefill-batch = --batch). First both serve
     every request arriving at once (saturation: the most requests/s each
     policy reaches); then each policy's rate is swept over fractions of its
     own saturation rate (0.4 to 1.2). The comparison at equal p90 TPOT: for
     a TPOT bound (2, 3 and 5 times the TPOT of one request served alone),
     the most requests/s each policy served in a run (saturated or swept)
     whose p90 TPOT stayed under the bound; the ratio continuous / static
     (the issue's target: at least 2).
  b. Chunked prefill on (--prefill-chunk 64) against off (the whole context
     per call), continuous batching, with long prompts mixed in: p99 TPOT
     (and TTFT) at the same rates.
  c. Disaggregated against colocated (braid-run --disaggregate) on the two
     cores of this kind of machine: a prefill rank and a decode rank (one
     thread each) against tp=2 (one thread each) and one rank of two
     threads, a's requests at one rate: TTFT and TPOT.

--quick runs a 0.9M-parameter model and a few requests (< 30 s once built) to check the
script; its figures mean little.
"""

import argparse
import json
import math
import os
import pathlib
import random
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path[:0] = [str(ROOT / "python"), str(ROOT / "test" / "lib"), str(ROOT / "bench")]

import machine  # noqa: E402

# The model (llama-tiny's preset with these fields) and the workloads.
# Full: 4 layers, d 512, 8 heads (4 kv), ffn 1408, V 8192, context 512: 20M
# parameters, a decode step of a few ms on two cores.
MODES = {
    "full": dict(
        model=dict(name="llama-serve-20m", layers=4, hidden=512, heads=8, kv_heads=4,
                   ffn=1408, vocab=8192, seq=512),
        batch=8, page=16, chunk=64,
        # a: prompts uniform in [8, 64], outputs log-uniform in [8, 256].
        mixed=dict(requests=48, prompt=(8, 64), output=(8, 256)),
        fractions=(0.4, 0.6, 0.8, 1.0, 1.2),
        # b: a fifth of the prompts 256-448 tokens, the others 16-64;
        # outputs uniform in [16, 64].
        long=dict(requests=32, short=(16, 64), long=(256, 448), share=0.2, output=(16, 64)),
        long_rates=(0.75,),
        disaggregated_rate=2.0,
        timeout=600),
    "quick": dict(
        model=dict(name="llama-serve-quick", layers=2, hidden=128, heads=4, kv_heads=2,
                   ffn=352, vocab=2048, seq=128),
        batch=4, page=8, chunk=16,
        mixed=dict(requests=12, prompt=(4, 32), output=(2, 48)),
        fractions=(0.5, 1.0),
        long=dict(requests=8, short=(4, 16), long=(64, 100), share=0.25, output=(4, 16)),
        long_rates=(20.0,),
        disaggregated_rate=40.0,
        timeout=120),
}
TPOT_BOUNDS = (2, 3, 5)   # times the TPOT of one request served alone

SUMMARY = re.compile(
    r"serve: (\d+) requests \((\d+) refused\), (\S+) requests/s, (\S+) output tokens/s, "
    r"ttft median/p90/p99 (\S+)/(\S+)/(\S+) ms, tpot median/p90/p99 (\S+)/(\S+)/(\S+) ms, "
    r"pages peak (\d+) of (\d+)[^,]*, preemptions (\d+), shared pages (\d+), iterations (\d+)")


# --------------------------------------------------------------------------
# requests
# --------------------------------------------------------------------------

class Workload:
    """Requests with fixed prompt and output lengths and arrival gaps drawn at
    rate 1; `write(rate)` scales the gaps (rate None: all arrive at once)."""

    def __init__(self, seed, count, prompt_len, output_len):
        r = random.Random(seed)
        self.requests = [(prompt_len(r), output_len(r)) for _ in range(count)]
        self.gaps = [r.expovariate(1.0) for _ in range(count)]
        self.gaps[0] = 0.0

    def arrivals(self, rate):
        t, out = 0.0, []
        for gap in self.gaps:
            t += gap / rate if rate else 0.0
            out.append(t * 1e3)
        return out

    def write(self, path, rate):
        with open(path, "w") as f:
            for (prompt, output), ms in zip(self.requests, self.arrivals(rate)):
                f.write(json.dumps({"prompt_len": prompt, "max_new_tokens": output,
                                    "arrival_ms": round(ms, 3)}) + "\n")
        return path


def mixed_workload(spec, seed):
    lo, hi = spec["output"]
    return Workload(seed, spec["requests"], lambda r: r.randint(*spec["prompt"]),
                    lambda r: int(round(lo * (hi / lo) ** r.random())))


def long_workload(spec, seed):
    def prompt(r):
        return r.randint(*spec["long"]) if r.random() < spec["share"] else r.randint(*spec["short"])
    return Workload(seed, spec["requests"], prompt, lambda r: r.randint(*spec["output"]))


# --------------------------------------------------------------------------
# runs
# --------------------------------------------------------------------------

class Failed(Exception):
    pass


def serve(args, workload, rate, chunk, prefill_batch, static=False, tag="run", extra=(),
          threads=None):
    """One braid-run --serve; a dict of the summary's figures and the run's
    completion and arrival rates."""
    tmp = pathlib.Path(args.tmp)
    requests = workload.write(tmp / f"{tag}.jsonl", rate)
    output = tmp / f"{tag}.out.jsonl"
    cmd = [str(args.build / "bin" / "braid-run"), str(args.model), "--serve", str(requests),
           "--batch", str(args.mode["batch"]), "--prefill-chunk", str(chunk),
           "--prefill-batch", str(prefill_batch), "--page-size", str(args.mode["page"]),
           "--seed", "1", "--cpu-threads", str(threads or args.threads), "--quiet", *extra]
    cmd += ["--output", str(output)]
    if static:
        cmd.append("--static-batching")
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.mode["timeout"])
    except subprocess.TimeoutExpired:
        raise Failed(f"{' '.join(cmd)}: timed out")
    m = SUMMARY.search(r.stdout)
    if r.returncode or not m:
        raise Failed(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    g = [float(x) for x in m.groups()]
    served = int(m.group(1)) - int(m.group(2))
    if "--output" in cmd:
        with open(output) as f:
            served = sum("ids" in json.loads(line) for line in f)
    if served != len(workload.requests):
        raise Failed(f"{' '.join(cmd)}: {served} of {len(workload.requests)} requests served")
    return dict(rate=rate, rps=g[2], tps=g[3], ttft=g[4:7], tpot=g[7:10], iterations=int(g[14]))


def row(label, res):
    rate = "at once" if res["rate"] is None else f"{res['rate']:.2f}/s"
    ttft = "/".join(f"{x:.0f}" for x in res["ttft"])
    tpot = "/".join(f"{x:.1f}" for x in res["tpot"])
    kept = "-" if res["rate"] is None else f"{res['rps'] / res['rate']:.2f}"
    print(f"| {label} | {rate} | {res['rps']:.2f} | {res['tps']:.0f} | {ttft} | {tpot} | {kept} "
          f"| {res['iterations']} |", flush=True)


HEADER = ("| policy | arrivals | requests/s | output tokens/s | TTFT ms median/p90/p99 "
          "| TPOT ms median/p90/p99 | served / offered | iterations |\n"
          "|---|---|---|---|---|---|---|---|")


# --------------------------------------------------------------------------
# the benchmarks
# --------------------------------------------------------------------------

def best_under(results, bound):
    """The run that served the most requests/s with p90 TPOT <= bound (None: none)."""
    ok = [r for r in results if r["tpot"][1] <= bound]
    return max(ok, key=lambda r: r["rps"]) if ok else None


def continuous_vs_static(args):
    mode = args.mode
    work = mixed_workload(mode["mixed"], args.seed)
    B, L = mode["batch"], mode["chunk"]
    # Continuous batching with prefill and decode calls apart, and with both
    # in one mixed call of B + L token rows (--token-budget).
    APART = ("--token-budget", "0")
    policies = {"continuous": dict(prefill_batch=1, static=False, extra=APART),
                "mixed": dict(prefill_batch=1, static=False,
                              extra=("--token-budget", str(B + L))),
                "static": dict(prefill_batch=B, static=True, extra=APART)}
    print(f"\n## a. continuous against static batching: {len(work.requests)} requests, prompts "
          f"{mode['mixed']['prompt'][0]}-{mode['mixed']['prompt'][1]} tokens (uniform), outputs "
          f"{mode['mixed']['output'][0]}-{mode['mixed']['output'][1]} (log-uniform); batch {B}, "
          f"chunks of {L}; continuous: prefill batch 1, static: prefill batch {B} (the wave)")
    alone = serve(args, Workload(args.seed, 1, lambda r: mode["mixed"]["prompt"][1],
                                 lambda r: mode["mixed"]["output"][1] // 2),
                  None, L, 1, tag="alone", extra=("--token-budget", "0"))
    unit = alone["tpot"][0]
    print(f"one request alone (prompt {mode['mixed']['prompt'][1]}, "
          f"{mode['mixed']['output'][1] // 2} tokens): TPOT {unit:.2f} ms, TTFT "
          f"{alone['ttft'][0]:.0f} ms\n")
    print(HEADER)
    # The policies' runs alternate, so that a load that drifts during the
    # run weighs on both alike.
    results = {name: [] for name in policies}
    for fraction in (None,) + tuple(mode["fractions"]):
        for name, p in policies.items():
            rate = round(results[name][0]["rps"] * fraction, 2) if fraction else None
            res = serve(args, work, rate, L, p["prefill_batch"], p["static"], tag=name,
                        extra=p["extra"])
            row(name, res)
            results[name].append(res)
    s = results["static"][0]
    print(f"\nsaturation (every request at once): static {s['rps']:.2f} requests/s (p90 TPOT "
          f"{s['tpot'][1]:.1f} ms)")
    for name in ("continuous", "mixed"):
        c = results[name][0]
        print(f"saturation: {name} {c['rps']:.2f} requests/s (p90 TPOT {c['tpot'][1]:.1f} ms): "
              f"{c['rps'] / s['rps']:.2f}x static")
    for k in TPOT_BOUNDS:
        bound = k * unit
        best = {name: best_under(rs, bound) for name, rs in results.items()}
        text = [f"{name} {b['rps']:.2f} requests/s (arrivals "
                f"{'at once' if b['rate'] is None else '%.2f/s' % b['rate']}, p90 TPOT "
                f"{b['tpot'][1]:.1f} ms)" if b else f"{name}: none of its runs"
                for name, b in best.items()]
        ratios = ", ".join(
            f"{name} / static " + (f"{best[name]['rps'] / best['static']['rps']:.2f}x"
                                   if best[name] and best["static"] else "n/a")
            for name in ("continuous", "mixed"))
        print(f"p90 TPOT <= {bound:.1f} ms ({k}x alone): {', '.join(text)}: {ratios}")
    return results


def chunked_prefill(args):
    mode = args.mode
    spec = mode["long"]
    work = long_workload(spec, args.seed + 1)
    context = mode["model"]["seq"]
    print(f"\n## b. chunked prefill on against off: {len(work.requests)} requests, "
          f"{spec['share']:.0%} with prompts of {spec['long'][0]}-{spec['long'][1]} tokens, "
          f"the others {spec['short'][0]}-{spec['short'][1]}; outputs "
          f"{spec['output'][0]}-{spec['output'][1]}; continuous batching, batch "
          f"{mode['batch']}, prefill batch 1\n")
    # The programs have fixed shapes: a prefill call costs its L rows however
    # short the prompt. One short and one long prompt alone show it.
    for prompt in (spec["short"][1], spec["long"][1]):
        alone = Workload(args.seed, 1, lambda r: prompt, lambda r: spec["output"][0])
        ttft = [serve(args, alone, None, chunk, 1, tag="alone",
                      extra=("--token-budget", "0"))["ttft"][0]
                for chunk in (mode["chunk"], context)]
        print(f"a {prompt}-token prompt alone: TTFT {ttft[0]:.0f} ms in chunks of "
              f"{mode['chunk']}, {ttft[1]:.0f} ms in one call of {context} rows")
    print()
    print(HEADER)
    B, L = mode["batch"], mode["chunk"]
    for rate in mode["long_rates"]:
        runs = {}
        for label, chunk, extra in (
                (f"chunks of {L}", L, ("--token-budget", "0")),
                (f"chunks of {L} in mixed calls (--token-budget {B + L})", L,
                 ("--token-budget", str(B + L))),
                (f"whole prompt ({context})", context, ("--token-budget", "0"))):
            runs[label] = serve(args, work, rate, chunk, 1, tag=f"chunk{chunk}", extra=extra)
            row(label, runs[label])
        on, mixed, off = runs.values()
        for name, res in (("on", on), ("mixed", mixed)):
            print(f"|  | at {rate:.2f}/s: p99 TPOT off/{name} "
                  f"{off['tpot'][2] / res['tpot'][2]:.2f}x, p99 TTFT off/{name} "
                  f"{off['ttft'][2] / res['ttft'][2]:.2f}x |  |  |  |  |  |  |")


def disaggregated(args):
    """Part c on this machine's two cores: two ranks, one thread each, as a
    prefill rank and a decode rank against tp=2, and one rank of two threads."""
    mode = args.mode
    work = mixed_workload(mode["mixed"], args.seed)
    rate = mode["disaggregated_rate"]
    print(f"\n## c. disaggregated against colocated: part a's requests at {rate:.2f}/s, batch "
          f"{mode['batch']}, chunks of {mode['chunk']}, prefill batch 1, on two cores\n")
    print(HEADER)
    runs = {"colocated, 1 rank of 2 threads": (("--token-budget", "0"), args.threads),
            "colocated, tp=2 (1 thread each)": (("--grid", "tp=2", "--token-budget", "0"), 1),
            "disaggregated, prefill 1 rank + decode 1 rank (1 thread each)":
                (("--disaggregate", "--prefill-grid", "tp=1", "--grid", "tp=1"), 1)}
    res = {}
    for label, (extra, threads) in runs.items():
        res[label] = serve(args, work, rate, mode["chunk"], 1, tag="disaggregated", extra=extra,
                           threads=threads)
        row(label, res[label])
    (_, one), (_, tp2), (_, dis) = res.items()
    for name, base in (("1 rank", one), ("tp=2", tp2)):
        print(f"|  | disaggregated / colocated {name}: p90 TTFT {dis['ttft'][1] / base['ttft'][1]:.2f}x, "
              f"p90 TPOT {dis['tpot'][1] / base['tpot'][1]:.2f}x |  |  |  |  |  |  |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", type=pathlib.Path, default=ROOT / "build")
    ap.add_argument("--quick", action="store_true", help="a tiny model and few requests (< 30 s)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--only", choices=("a", "b", "c"), help="run one part")
    ap.add_argument("--batch", type=int, help="decode rows (default: 8, quick 4)")
    ap.add_argument("--chunk", type=int, help="prefill chunk (default: 64, quick 16)")
    args = ap.parse_args()
    args.mode = dict(MODES["quick" if args.quick else "full"])
    for key in ("batch", "chunk"):
        if getattr(args, key):
            args.mode[key] = getattr(args, key)
    from braid.presets import build, preset
    cfg = preset("llama-tiny", **args.mode["model"])
    with tempfile.TemporaryDirectory(prefix="braid-bench-serving-") as tmp:
        args.tmp = tmp
        args.model = pathlib.Path(tmp) / "model.mlir"
        args.model.write_text(build("llama-tiny", **args.mode["model"], batch=1))
        from braid_ref import models
        params = sum(math.prod(shape) for _, shape, *_ in models.param_specs(cfg))
        m = args.mode["model"]
        print(f"machine: {machine.describe()}; braid --cpu-threads {args.threads}; load average "
              f"{os.getloadavg()[0]:.2f} at the start")
        print(f"model: {m['name']} (llama-tiny preset: {m['layers']} layers, d {m['hidden']}, "
              f"{m['heads']} heads ({m['kv_heads']} kv), ffn {m['ffn']}, V {m['vocab']}, "
              f"context {m['seq']}: {params / 1e6:.1f}M parameters), f32, pages of "
              f"{args.mode['page']}")
        try:
            if args.only in (None, "a"):
                continuous_vs_static(args)
            if args.only in (None, "b"):
                chunked_prefill(args)
            if args.only in (None, "c"):
                disaggregated(args)
        except Failed as e:
            print(f"FAILED: {e}")
            return 1
        print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
